"""Slack's message markup → the text the agent reads (design §3: mentions are the adapter's job).

Slack sends ``<@U123>`` for user mentions, ``<#C123|general>`` for channels, ``<!here>`` for
broadcasts, ``<https://x|label>`` for links, and ``&amp;``/``&lt;``/``&gt;`` for the three
characters it reserves. The bot's own mention is removed where it addresses the bot (at the
start) and written as ``@name`` elsewhere; other people appear by display name, looked up
with ``users.info`` and cached, so the agent never sees raw ids.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping

from bot.delivery.bounded import RecentMap

logger = logging.getLogger(__name__)

_TOKEN = re.compile(r"<([^<>\n]*)>")
_USER = re.compile(r"@([UW][A-Z0-9]+)(?:\|([^>]*))?")
LOOKUP_TIMEOUT_S = 1.0
CACHE_SIZE = 4096

UserLookup = Callable[[str], Awaitable[str | None]]
"""``users.info`` → a display name, ``None`` when Slack has none."""


class UserNames:
    """Display names by user id, cached (LRU); lookups are bounded in time and never fatal."""

    def __init__(self, lookup: UserLookup, *, size: int = CACHE_SIZE) -> None:
        self._lookup = lookup
        self._cache: RecentMap[str, str] = RecentMap(size)

    def known(self, user_id: str) -> str | None:
        return self._cache.touch(user_id)

    def remember(self, user_id: str, name: str) -> None:
        if not name:
            return
        self._cache.keep(user_id, name)

    async def resolve(self, user_ids: Iterable[str]) -> dict[str, str]:
        """Names for the ids that have one; unknown ids are simply absent."""
        wanted = sorted({uid for uid in user_ids if uid})
        missing = [uid for uid in wanted if self.known(uid) is None]
        if missing:
            try:
                async with asyncio.timeout(LOOKUP_TIMEOUT_S):
                    found = await asyncio.gather(
                        *(self._lookup(uid) for uid in missing), return_exceptions=True
                    )
            except TimeoutError:
                found = []
                logger.debug("user lookup timed out for %d user(s)", len(missing))
            for uid, name in zip(missing, found, strict=False):
                if isinstance(name, str):
                    self.remember(uid, name)
                elif isinstance(name, BaseException):
                    logger.debug("user lookup failed for %s: %s", uid, name)
        return {uid: name for uid in wanted if (name := self.known(uid)) is not None}


def mentioned_users(text: str) -> set[str]:
    users = set()
    for token in _TOKEN.findall(text):
        match = _USER.fullmatch(token)
        if match:
            users.add(match.group(1))
    return users


def mentions_user(text: str, user_id: str) -> bool:
    return bool(user_id) and user_id in mentioned_users(text)


def strip_leading_mention(text: str, user_id: str) -> str:
    """Remove the mentions of ``user_id`` that open the message (``<@BOT> hi`` → ``hi``)."""
    if not user_id:
        return text
    pattern = re.compile(rf"^\s*(?:<@{re.escape(user_id)}(?:\|[^>]*)?>[\s,:]*)+")
    return pattern.sub("", text, count=1)


def to_text(text: str, names: Mapping[str, str]) -> str:
    """Decode Slack markup into plain Markdown-ish text; ``names`` maps user ids to names."""

    def replace(match: re.Match[str]) -> str:
        return _decode_token(match.group(1), names)

    decoded = _TOKEN.sub(replace, text)
    return decoded.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&").strip()


def _decode_token(token: str, names: Mapping[str, str]) -> str:
    user = _USER.fullmatch(token)
    if user:
        return f"@{names.get(user.group(1)) or user.group(2) or user.group(1)}"
    target, _, label = token.partition("|")
    for prefix, decode in _SPECIAL:
        if target.startswith(prefix):
            return decode(target.removeprefix(prefix), label)
    return f"[{label}]({target})" if label and label != target else target


def _broadcast(target: str, label: str) -> str:
    return label if target.startswith("date") and label else f"@{label or target}"


_SPECIAL: tuple[tuple[str, Callable[[str, str], str]], ...] = (
    ("#", lambda target, label: f"#{label or target}"),
    ("!subteam^", lambda target, label: label or f"@{target}"),
    ("!", _broadcast),
    ("mailto:", lambda target, label: label or target),
)
