"""The journal over time, for the operator console (design §23): the newest messages, and
when each was received and finished, for its charts and its conversation search; the outbox's
rows over time, for its lag.

Like ``bot.ports.chats``, a small protocol beside the Store port rather than in it: a store
without it still runs the daemon; the console then says it has no history to show.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

from bot.ports.store import Store
from bot.records import InboundStatus, JournalEntry, OutboxState


@dataclass(frozen=True, slots=True, kw_only=True)
class JournalPoint:
    """One journaled message as the charts see it: no text, no ids."""

    channel: str
    status: InboundStatus
    reason: str | None
    recorded_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class DeliveryPoint:
    """One outbox row as the charts see it: made at ``created_at``; a sent row was sent at
    ``updated_at``."""

    channel: str
    state: OutboxState
    created_at: datetime
    updated_at: datetime


class JournalWindow(Protocol):
    async def recent(
        self, *, limit: int, channel: str | None = None, chat_id: str | None = None
    ) -> list[JournalEntry]:
        """The newest journal entries, newest first (of one channel, one chat)."""
        ...

    async def points(self, since: datetime, limit: int) -> list[JournalPoint]:
        """Entries recorded at or after ``since``, newest first, at most ``limit``."""
        ...

    async def deliveries(self, since: datetime, limit: int) -> list[DeliveryPoint]:
        """Outbox rows made at or after ``since`` and every pending row however old, newest
        first, at most ``limit``."""
        ...


@runtime_checkable
class KnowsActivity(Protocol):
    @property
    def journal_window(self) -> JournalWindow: ...


def journal_window_of(store: Store) -> JournalWindow | None:
    """The store's ``JournalWindow``, if it has one."""
    return store.journal_window if isinstance(store, KnowsActivity) else None
