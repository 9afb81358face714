"""Mutes (design §22): conversations where the bot answers nothing for a while
or until ``/unmute``, because a person asked it to, a human stepped in, or the agent handed off.

Kept beside the Store port (as ``bot/ports/schedules.py`` is), so a store without mutes still
works: nothing is ever muted there and ``/mute`` says mutes are off.

A mute names a conversation by its ``ConversationKey`` (a topic, a member's conversation or a
whole chat); a mute of the chat itself (no topic, no member) silences every conversation in it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

from bot.messages import ConversationKey
from bot.ports.store import Store


@dataclass(frozen=True, slots=True, kw_only=True)
class Mute:
    key: ConversationKey
    until: datetime | None
    """When it ends by itself; ``None``: at ``/unmute``."""
    reason: str
    """``/mute``, ``yield to <user>``, ``handoff: <why>``: what status and the audit show."""
    muted_by: str
    """``<channel>:<user id>`` or ``agent:<channel>:<user id>``."""
    muted_at: datetime

    def active(self, now: datetime) -> bool:
        return self.until is None or self.until > now


class MuteStore(Protocol):
    async def put(self, mute: Mute) -> None:
        """Mute the key (replacing a mute it had)."""
        ...

    async def lift(self, key: ConversationKey) -> Mute | None:
        """Remove the key's mute; the mute that was lifted, if any (expired ones too)."""
        ...

    async def active(self, now: datetime) -> list[Mute]:
        """Mutes still in force at ``now``, oldest first."""
        ...

    async def purge(self, now: datetime) -> int:
        """Delete mutes that ended before ``now``; how many."""
        ...


@runtime_checkable
class KnowsMutes(Protocol):
    @property
    def mutes(self) -> MuteStore: ...


def mutes_of(store: Store) -> MuteStore | None:
    """The store's ``MuteStore``, if it has one."""
    return store.mutes if isinstance(store, KnowsMutes) else None


def chat_key(key: ConversationKey) -> ConversationKey:
    """The whole chat's key: what a chat-wide mute is stored under."""
    return ConversationKey(channel=key.channel, account_id=key.account_id, chat_id=key.chat_id)


@runtime_checkable
class TurnHandoff(Protocol):
    """The agent's ``handoff`` tool, bound to the running turn's own conversation: it mutes
    that conversation, tells the on-call people and ends the turn with a short note. Returns
    a sentence for the model, never raises for bad input."""

    async def handoff(self, reason: str) -> str: ...
