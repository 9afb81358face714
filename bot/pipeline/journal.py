"""The inbound journal's statuses, changed in one place (design §5, §11).

Every status change of an inbound entry goes through a ``Journal``: named transitions
(``running``, ``handled``, ``dropped``, ``failed``, ``noted``), checked against ``NEXT``, the
one table of what may follow what. A finished entry (handled, dropped, failed) is never
unfinished: ``NEXT`` gives it no way back, and the store's conditional update
(``store/inbound.py``) holds the same line against the one thing Python cannot see, a late
mark of a replica that lost the chat after the new holder finished the entry (design §11,
fencing). A reply that answers entries finishes them in its own transaction (``finishes``:
``store/outbox.py`` writes that rule once, schema 10 dropped the trigger that restated it), not
here.
"""

from __future__ import annotations

from typing import Final

from bot.messages import ConversationKey
from bot.ports import InboundJournal
from bot.records import InboundStatus, JournalEntry

_FINISHED: Final = frozenset({InboundStatus.HANDLED, InboundStatus.DROPPED, InboundStatus.FAILED})
NEXT: Final = {
    InboundStatus.ACCEPTED: frozenset({InboundStatus.ACCEPTED, InboundStatus.RUNNING, *_FINISHED}),
    InboundStatus.RUNNING: frozenset({InboundStatus.RUNNING, *_FINISHED}),
    InboundStatus.HANDLED: frozenset[InboundStatus](),
    InboundStatus.DROPPED: frozenset[InboundStatus](),
    InboundStatus.FAILED: frozenset[InboundStatus](),
}
"""What status may follow which; a finished one is final."""


class Journal:
    """The status changes of inbound entries (``store.inbound``), by name."""

    def __init__(self, inbound: InboundJournal) -> None:
        self._inbound = inbound

    async def running(
        self,
        entry: int | JournalEntry,
        reason: str,
        *,
        key: ConversationKey | None = None,
        thread_id: str | None = None,
    ) -> None:
        """A turn took the entry (``reason``: its ``TurnMark``)."""
        await self._move(entry, InboundStatus.RUNNING, reason, key=key, thread_id=thread_id)

    async def handled(
        self, entry: int | JournalEntry, reason: str | None, *, key: ConversationKey | None = None
    ) -> None:
        """Finished: answered, asked, ended on purpose (a stop, a mute, a withdrawal…)."""
        await self._move(entry, InboundStatus.HANDLED, reason, key=key)

    async def finish(
        self,
        entry: int | JournalEntry,
        status: InboundStatus,
        reason: str | None,
        *,
        key: ConversationKey | None = None,
        thread_id: str | None = None,
    ) -> None:
        """Finished as ``status`` (handled, dropped or failed)."""
        if status not in _FINISHED:
            raise ValueError(f"{status} does not finish an inbound entry")
        await self._move(entry, status, reason, key=key, thread_id=thread_id)

    async def dropped(self, entry: int | JournalEntry, reason: str) -> None:
        """Finished without work: not for the bot, not allowed, too long…"""
        await self._move(entry, InboundStatus.DROPPED, reason)

    async def failed(self, entry: int | JournalEntry, reason: str) -> None:
        """Finished with an error the chat was told of."""
        await self._move(entry, InboundStatus.FAILED, reason)

    async def accepted(self, entry: int | JournalEntry, reason: str) -> None:
        """Still waiting for its turn, with ``reason`` (an edit applied, a prompt to pick up)."""
        await self._move(entry, InboundStatus.ACCEPTED, reason)

    async def noted(self, entry: JournalEntry, reason: str) -> None:
        """The same status, a new reason."""
        await self._move(entry, entry.status, reason)

    async def _move(
        self,
        entry: int | JournalEntry,
        status: InboundStatus,
        reason: str | None,
        *,
        key: ConversationKey | None = None,
        thread_id: str | None = None,
    ) -> None:
        if isinstance(entry, JournalEntry):
            if status not in NEXT[entry.status]:
                raise ValueError(f"inbound entry {entry.id}: {entry.status} cannot become {status}")
            entry = entry.id
        await self._inbound.update(entry, status, reason=reason, key=key, thread_id=thread_id)
