"""Group context for ``group_policy: listen`` (design §20).

In listen mode a group message that is not addressed to the bot gets no answer, but the router
hands it to ``GroupContext.hear``; the next message that is addressed to the bot takes what
was heard before it in the same place (``take``) and the agent reads it as a block in front of
that message (``render_context``).

Decisions, and why:

- **Memory only, per replica.** Nothing heard is written to the store or the logs: chatter the
  bot was not asked about is the most private thing it sees, so it is kept the shortest way
  possible and a restart forgets it. A chat is routed by one replica at a time (its lease),
  so that replica's memory is the chat's context; a chat that moves loses what was heard.
- **Bounded.** Per chat, the newest ``max_messages`` within ``max_age_minutes``, each cut to
  ``max_message_chars``; at most ``MAX_CHATS`` chats (the least recently heard is forgotten
  first). Expired messages are dropped whenever anything is heard or taken (a sweep over
  every chat at most once a second), so none outlives its age by much more than the next
  group message the bot sees.
- **Given once.** What an addressed message takes is gone from the buffer: the agent's thread
  keeps it from then on, and giving it again would repeat it there.
- **Same place.** A message in a platform thread takes what was said in that thread (and the
  thread's opening message); a top-level message takes the top-level chatter.
- **Edits and recalls** of a heard message change or remove it (a recalled message is never
  given to the agent).
- Dropping logs counts only, never text (design §10).
"""

from __future__ import annotations

import dataclasses
import logging
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from bot.config.listen import ListenSettings
from bot.config.settings import GroupPolicy, Settings
from bot.hub import ChannelHub, ChannelState
from bot.messages import ChatType, InboundMessage, RevisionKind, utc_now
from bot.ports import ChannelCapabilities

logger = logging.getLogger(__name__)

MAX_CHATS = 4096
"""Chats whose chatter is held at once; beyond it the least recently heard one is forgotten."""
SWEEP_INTERVAL = timedelta(seconds=1)
"""The least time between two sweeps of every chat for expired messages."""

CONTEXT_HEADER = "Recent messages in this chat, not addressed to you (oldest first, times UTC):"

ChatRef = tuple[str, str, str]
"""``(channel, account_id, chat_id)``: the chat a message was heard in."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HeardMessage:
    """One unaddressed group message, as much of it as the agent is shown."""

    message_id: str
    thread_root_id: str | None
    sender: str
    text: str
    at: datetime
    """When it was sent, as the platform says (shown to the agent)."""
    kept_at: datetime
    """When it was heard, by the daemon's clock (what the age bound counts from)."""


class GroupContext:
    """The chatter heard per chat, bounded and in memory; loop-only (no locks needed)."""

    def __init__(
        self,
        settings: Callable[[], Settings],
        clock: Callable[[], datetime] = utc_now,
        max_chats: int = MAX_CHATS,
    ) -> None:
        self._settings = settings
        self._clock = clock
        self._max_chats = max_chats
        self._chats: OrderedDict[ChatRef, deque[HeardMessage]] = OrderedDict()
        self._swept = datetime.min.replace(tzinfo=UTC)

    def listens(self, message: InboundMessage) -> bool:
        """Whether the message's channel keeps group chatter (``group_policy: listen``)."""
        policy = self._settings().channel_policy(message.channel).group_policy
        return message.chat_type is ChatType.GROUP and policy is GroupPolicy.LISTEN

    @property
    def held(self) -> int:
        """Messages held across all chats."""
        return sum(len(heard) for heard in self._chats.values())

    def hear(self, message: InboundMessage) -> bool:
        """Keep an unaddressed group message as context; ``False`` when not listening there."""
        if not self.listens(message):
            return False
        bounds = self._bounds()
        now = self._clock()
        chat = _chat_of(message)
        heard = self._chats.pop(chat, None) or deque()
        self._chats[chat] = heard  # now the most recently heard chat
        heard.append(_heard(message, bounds.max_message_chars, now))
        overflow = 0
        while len(heard) > bounds.max_messages:
            heard.popleft()
            overflow += 1
        _log_dropped(chat, overflow, "max_messages")
        self._expire(now)
        self._forget_beyond_capacity()
        return True

    def take(self, message: InboundMessage) -> tuple[HeardMessage, ...]:
        """What was heard before ``message`` in its place, removed from the buffer."""
        if not self.listens(message):
            return ()
        now = self._clock()
        self._expire(now)
        chat = _chat_of(message)
        heard = self._chats.get(chat)
        if heard is not None:
            self._prune(chat, heard, now)
        if not heard:
            return ()
        thread = message.thread_root_id
        given = tuple(entry for entry in heard if _same_place(entry, thread))
        if given:
            kept = [entry for entry in heard if not _same_place(entry, thread)]
            heard.clear()
            heard.extend(kept)
            if not heard:
                del self._chats[chat]
        return given

    def revise(self, message: InboundMessage) -> None:
        """An edit or a recall of a heard message: the context shows the new text, or forgets
        the message (what its author took back is never given to the agent)."""
        revision = message.revision
        chat = _chat_of(message)
        heard = self._chats.get(chat)
        if revision is None or not heard:
            return
        for index, entry in enumerate(heard):
            if entry.message_id != revision.message_id:
                continue
            if revision.kind is RevisionKind.RECALLED:
                del heard[index]
                if not heard:
                    del self._chats[chat]
            else:
                text = _text_of(message, self._bounds().max_message_chars)
                heard[index] = dataclasses.replace(entry, text=text)
            return

    def _bounds(self) -> ListenSettings:
        return self._settings().conversations.listen

    def _expire(self, now: datetime) -> None:
        """Drop messages past ``max_age_minutes`` in every chat (at most once a second)."""
        if now - self._swept < SWEEP_INTERVAL:
            return
        self._swept = now
        oldest = self._oldest_kept(now)
        for chat in [chat for chat, heard in self._chats.items() if heard[0].kept_at < oldest]:
            self._prune(chat, self._chats[chat], now)

    def _prune(self, chat: ChatRef, heard: deque[HeardMessage], now: datetime) -> None:
        """Drop the chat's messages past their age; forget the chat when none is left."""
        oldest = self._oldest_kept(now)
        expired = 0
        while heard and heard[0].kept_at < oldest:
            heard.popleft()
            expired += 1
        _log_dropped(chat, expired, "max_age")
        if not heard:
            self._chats.pop(chat, None)

    def _oldest_kept(self, now: datetime) -> datetime:
        return now - timedelta(minutes=self._bounds().max_age_minutes)

    def _forget_beyond_capacity(self) -> None:
        while len(self._chats) > self._max_chats:
            chat, heard = self._chats.popitem(last=False)
            _log_dropped(chat, len(heard), "max_chats")


def unheard_reason(settings: Settings, channel: str, caps: ChannelCapabilities) -> str | None:
    """Why ``group_policy: listen`` will hear nothing on this channel, if it is set there and
    the platform (as its adapter knows) delivers the bot only messages addressed to it."""
    if settings.channel_policy(channel).group_policy is not GroupPolicy.LISTEN:
        return None
    return caps.listen_caveat


class ListenWarnings:
    """A hub listener: when a channel starts running in listen mode on a platform that keeps
    unaddressed group messages from the bot, say so once (not on every reconnect)."""

    def __init__(self, settings: Callable[[], Settings], hub: ChannelHub) -> None:
        self._settings = settings
        self._hub = hub
        self._warned: set[tuple[str, str]] = set()

    def __call__(self, channel: str, previous: ChannelState | None, state: ChannelState) -> None:
        del previous
        caps = self._hub.capabilities_of(channel)
        if state is not ChannelState.RUNNING or caps is None:
            return
        reason = unheard_reason(self._settings(), channel, caps)
        if reason is None or (channel, reason) in self._warned:
            return
        self._warned.add((channel, reason))
        logger.warning(
            "channel %s: group_policy listen: %s",
            channel,
            reason,
        )


def render_context(heard: Iterable[HeardMessage]) -> str:
    """The block the agent reads before the addressed message; empty when nothing was heard.
    Times are hours and minutes, with the date when the messages span more than one day."""
    entries = list(heard)
    if not entries:
        return ""
    dated = len({entry.at.date() for entry in entries}) > 1
    stamp = "%Y-%m-%d %H:%M" if dated else "%H:%M"
    lines = [f"[{entry.at:{stamp}}] {entry.sender}: {entry.text}" for entry in entries]
    return "\n".join([CONTEXT_HEADER, *lines])


def _chat_of(message: InboundMessage) -> ChatRef:
    return (message.channel, message.account_id, message.chat_id)


def _same_place(entry: HeardMessage, thread_root_id: str | None) -> bool:
    """Top-level chatter for a top-level message; a thread's messages (and its opening
    message) for a message in that thread."""
    if thread_root_id is None:
        return entry.thread_root_id is None
    return thread_root_id in (entry.thread_root_id, entry.message_id)


def _heard(message: InboundMessage, max_chars: int, now: datetime) -> HeardMessage:
    return HeardMessage(
        message_id=message.message_id,
        thread_root_id=message.thread_root_id,
        sender=message.sender.shown_as,
        text=_text_of(message, max_chars),
        at=message.received_at.astimezone(UTC),
        kept_at=now,
    )


def _text_of(message: InboundMessage, max_chars: int) -> str:
    """The message on one line, its files named, cut to ``max_chars``."""
    text = " ".join(message.text.split())
    if message.attachments:
        names = ", ".join(attachment.name for attachment in message.attachments)
        text = f"{text} [attached: {names}]".strip()
    if len(text) > max_chars:
        text = text[: max_chars - 1].rstrip() + "…"
    return text


def _log_dropped(chat: ChatRef, count: int, reason: str) -> None:
    """Counts only: the text of what is dropped is never logged (design §10)."""
    if count:
        logger.debug(
            "group context dropped channel=%s chat=%s count=%d reason=%s",
            chat[0],
            chat[2],
            count,
            reason,
        )
