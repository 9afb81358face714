"""Callers waiting for one outbox row's attempt (``Outbox.send_now``, ``Outbox.withdraw``).

A caller that recorded a row, or wants one taken back while it is being sent, waits for the
outcome of the row's next attempt rather than polling the store for it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

from bot.messages import SentRef


class AttemptWaiters:
    def __init__(self) -> None:
        self._futures: dict[int, list[asyncio.Future[SentRef | None]]] = {}
        """Row id → the callers waiting for its next attempt."""
        self._under_way: set[int] = set()
        """Rows whose platform call is under way right now."""

    def under_way(self, row_id: int) -> bool:
        return row_id in self._under_way

    @contextlib.contextmanager
    def attempting(self, row_id: int) -> Iterator[None]:
        """Mark the row's attempt under way inside the block."""
        self._under_way.add(row_id)
        try:
            yield
        finally:
            self._under_way.discard(row_id)

    @contextlib.contextmanager
    def waiting_for(self, row_id: int) -> Iterator[asyncio.Future[SentRef | None]]:
        """A future resolved with the row's next attempt (its message, or ``None``)."""
        future: asyncio.Future[SentRef | None] = asyncio.get_running_loop().create_future()
        waiters = self._futures.setdefault(row_id, [])
        waiters.append(future)
        try:
            yield future
        finally:
            waiters.remove(future)
            if not waiters:
                del self._futures[row_id]

    def resolve(self, row_id: int, ref: SentRef | None) -> None:
        """The row's attempt is over: wake everyone waiting for it."""
        for future in self._futures.get(row_id, ()):
            if not future.done():
                future.set_result(ref)
