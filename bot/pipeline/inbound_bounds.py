"""How long an inbound message may be (``conversations.max_inbound_chars``, design §10).

Platforms take far longer messages than anyone types (Slack 40 000 characters, Feishu about
30 KB), and without a bound a pasted 300 000-character log went whole to the model: a slow,
costly turn that may overflow its context. The router checks every message once, for every
channel, before a command, an answer or a turn can use its text. A refused message gets a
reply that names its length and the limit, and its journal entry ends as dropped
(``too_long``): the platform was acknowledged, so nothing is redelivered or resumed.

Only what is meant for the bot is refused aloud: a DM, a command, a group message addressed
to the bot or answering its question. Long group chatter that is not for the bot goes on to
be dropped (or kept as context, cut to ``listen.max_message_chars``) like any other, and a
long edit is dropped without a word (the message it edits stands).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from typing_extensions import override

from bot.config.settings import Settings
from bot.messages import ChatType, InboundMessage
from bot.metrics import DropReason
from bot.pipeline.bus import Accepted
from bot.pipeline.clarifications import Clarifications
from bot.pipeline.route import RouteActions, RouteStep, Routing

Addressed = Callable[[InboundMessage], Awaitable[bool]]
"""Whether a group message is for the bot (``addressing.Addressing``: mention, reply, topic)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Oversize:
    """A message over the limit: what to tell its sender (``None``: nothing)."""

    length: int
    limit: int
    reply: str | None


def too_long_text(length: int, limit: int) -> str:
    return (
        f"Your message is {length:,} characters long; the limit is {limit:,}. "
        "Send it as a file instead."
    )


class InboundBounds:
    def __init__(
        self,
        settings: Callable[[], Settings],
        clarifications: Clarifications,
        addressed: Addressed,
    ) -> None:
        self._settings = settings
        self._clarifications = clarifications
        self._addressed = addressed

    async def check(self, message: InboundMessage, *, is_command: bool) -> Oversize | None:
        """``None`` when the message may go on; else how it is refused."""
        limit = self._settings().conversations.max_inbound_chars
        length = len(message.text)
        if length <= limit:
            return None
        if await self._for_the_bot(message, is_command=is_command):
            return Oversize(length=length, limit=limit, reply=too_long_text(length, limit))
        if message.revision is not None:
            return Oversize(length=length, limit=limit, reply=None)
        return None  # group chatter: the router drops it (or keeps it cut) as not addressed

    async def _for_the_bot(self, message: InboundMessage, *, is_command: bool) -> bool:
        if message.chat_type is ChatType.DM or is_command:
            return True
        if await self._addressed(message):
            return True
        return await self._clarifications.awaits_answer(message)


class RefuseOversize(RouteStep):
    """The route's length check, after access and before a command, an answer or a turn
    uses the text; ``RevisionStep`` checks edits with ``refuse`` (never as commands)."""

    def __init__(self, bounds: InboundBounds, actions: RouteActions) -> None:
        self._bounds = bounds
        self._actions = actions

    @override
    async def route(self, item: Accepted, ctx: Routing) -> str | None:
        return await self.refuse(item, is_command=ctx.asked is not None)

    async def refuse(self, item: Accepted, *, is_command: bool) -> str | None:
        """Refuse a message over ``max_inbound_chars``; ``None``: go on."""
        oversize = await self._bounds.check(item.message, is_command=is_command)
        if oversize is None:
            return None
        if oversize.reply:
            await self._actions.tell_sender(item, oversize.reply)
        return await self._actions.drop(item, DropReason.TOO_LONG)
