"""Chats whose outbox rows must stay in the store for now, for the outbox (design §8, §11).

A held chat sends nothing: its rows wait in the store, in order, and when the hold ends the
store is polled for them (``StorePolls.soon``). One chat may be held for three reasons:

- a **retry**: an earlier row waits for its retry time. The hold lasts until a poll at or
  after that time has run: until then the older row is in the store, not in hand, and a
  newer row of the chat sent directly would overtake it;
- a **reservation** of a row an earlier process left (a placeholder crash recovery finishes
  itself): nothing goes out, not even that row, until recovery ``release``s it;
- a **pause** of chats being taken over from a replica that is gone, while the takeover
  withdraws or reserves what that replica left.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Protocol

from bot.delivery.attempt import destination_key
from bot.delivery.bounded import Until
from bot.delivery.ratelimit import DestinationKey
from bot.records import OutboxRow


class StorePolls(Protocol):
    """Asks the outbox worker to look at the store (``bot.delivery.outbox_polls.PollTimes``)."""

    def soon(self) -> None: ...

    def at(self, when: datetime) -> None: ...


class ChatWaits:
    def __init__(self, clock: Callable[[], datetime], polls: StorePolls) -> None:
        self._clock = clock
        self._polls = polls
        self._polled_at = datetime.min.replace(tzinfo=UTC)
        """The time the latest store poll asked for due rows with: it ends retry holds."""
        self._retries: Until[DestinationKey, datetime] = Until(lambda: self._polled_at)
        self._reserved: dict[DestinationKey, set[int]] = {}
        self._paused: dict[DestinationKey, int] = {}
        self._on_release = asyncio.Event()
        """Set (and replaced) whenever a reserved row is released."""

    def keeps_waiting(self, key: DestinationKey) -> bool:
        """Whether the chat must send nothing now (its rows are polled when the hold ends)."""
        if key in self._reserved or key in self._paused:
            return True
        until = self._retries.get(key)
        if until is not None and until <= self._clock():
            # The wait is over, but the older row is still in the store: poll before sending.
            self._polls.soon()
        return until is not None

    # ------------------------------------------------------------------ retries

    def retry_at(self, key: DestinationKey, until: datetime) -> None:
        """A row of the chat waits for a retry at ``until``: nothing after it goes first."""
        self._retries.extend(key, until)
        self._polls.at(until)

    def polled(self, at: datetime) -> None:
        """A store poll asked for the rows due at ``at``: retry holds up to then are over."""
        self._polled_at = max(self._polled_at, at)

    # ------------------------------------------------------------------ crash recovery

    def reserve(self, row: OutboxRow) -> None:
        self._reserved.setdefault(destination_key(row.item.delivery), set()).add(row.id)

    def is_reserved(self, row: OutboxRow) -> bool:
        return row.id in self._reserved.get(destination_key(row.item.delivery), ())

    async def until_released(self, row: OutboxRow) -> None:
        while self.is_reserved(row):
            await self._on_release.wait()

    def release(self, row: OutboxRow) -> None:
        """End a reservation; once its chat has no other, the chat's rows are polled."""
        key = destination_key(row.item.delivery)
        rows = self._reserved.get(key)
        if rows is None:
            return
        rows.discard(row.id)
        self._on_release.set()
        self._on_release = asyncio.Event()
        if not rows:
            del self._reserved[key]
            self._polls.soon()

    @contextlib.contextmanager
    def paused(self, keys: Sequence[DestinationKey]) -> Iterator[None]:
        """Pause these chats inside the block (blocks may overlap); poll after it."""
        for key in keys:
            self._paused[key] = self._paused.get(key, 0) + 1
        try:
            yield
        finally:
            for key in keys:
                left = self._paused[key] - 1
                if left:
                    self._paused[key] = left
                else:
                    del self._paused[key]
            self._polls.soon()
