"""Per-chat queues of the outbox: each chat's sender task and the rows waiting behind it.

One sender task per chat at work sends its rows in id order and stops at a row that must
wait (for a retry, say): the rows behind it go back to the worker, which finds the chat held
and leaves them in the store until the hold ends. Chats are independent of each other.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Protocol

from bot.delivery.attempt import AttemptOutcome, destination_key
from bot.delivery.bounded import RecentMap, RecentSet
from bot.delivery.ratelimit import DestinationKey
from bot.delivery.waits import ChatWaits
from bot.records import OutboxRow

FINISHED_MEMORY = 4096

SendRow = Callable[[OutboxRow], Awaitable[AttemptOutcome]]
"""One attempt of one row (``Outbox._attempt``)."""


class GiveBack(Protocol):
    """A sender stopped: the rows that were queued behind it, and whether to poll the store."""

    def __call__(self, rows: list[OutboxRow], *, poll: bool) -> None: ...


class ChatQueues:
    def __init__(self, holds: ChatWaits, send: SendRow, give_back: GiveBack) -> None:
        self._waits = holds
        self._send = send
        self._give_back = give_back
        self._senders: dict[DestinationKey, asyncio.Task[None]] = {}
        self._queued: dict[DestinationKey, list[OutboxRow]] = {}
        """Rows from this process waiting for their chat's sender to finish."""
        self._claimed: set[int] = set()
        """Rows being sent or queued: a poll that sees them leaves them be."""
        self._finished: RecentMap[int, datetime] = RecentMap(FINISHED_MEMORY)
        """Rows this process finished recently, with the ``updated_at`` of the copy it
        finished: a copy no newer (still in a queue, or read by a poll racing the send) is not
        resent; a newer one was revived since (``outbox retry``) and goes out again."""
        self._withdrawn: RecentSet[int] = RecentSet(FINISHED_MEMORY)
        """Rows taken back by ``Outbox.withdraw``; a copy still in a queue is skipped."""
        self._poll_when_done = False
        """A poll found rows of a chat at work: poll again once a sender finishes."""

    @property
    def busy(self) -> bool:
        """Whether a sender is at work (or rows wait for one)."""
        return bool(self._senders or self._queued)

    def finished_recently(self, row_id: int) -> bool:
        return row_id in self._finished

    def withdraw(self, row_id: int) -> None:
        """Skip the row if a sender still has it (it is marked dead in the store)."""
        self._withdrawn.add(row_id)

    def route(self, rows: dict[int, OutboxRow], polled: set[int]) -> None:
        """Start a sender per chat, or queue rows behind the chat's sender at work."""
        groups: dict[DestinationKey, list[OutboxRow]] = {}
        for row_id in sorted(i for i in rows if i not in self._claimed and not self._done(rows[i])):
            row = rows[row_id]
            groups.setdefault(destination_key(row.item.delivery), []).append(row)
        for key, group in groups.items():
            if self._waits.keeps_waiting(key):
                continue  # in the store; polled again when the hold ends
            if key in self._senders:
                # Rows from this process wait in memory; polled ones are found by a new poll.
                waiting = [row for row in group if row.id not in polled]
                self._queued.setdefault(key, []).extend(waiting)
                self._claimed.update(row.id for row in waiting)
                self._poll_when_done |= any(row.id in polled for row in group)
                continue
            self._start(key, group)

    def _done(self, row: OutboxRow) -> bool:
        finished_copy = self._finished.get(row.id)
        return finished_copy is not None and row.updated_at <= finished_copy

    def _start(self, key: DestinationKey, rows: list[OutboxRow]) -> None:
        self._claimed.update(row.id for row in rows)
        task = asyncio.create_task(self._send_rows(rows), name=f"outbox:{key[0]}:{key[2]}")
        self._senders[key] = task
        task.add_done_callback(functools.partial(self._sender_done, key))

    def _sender_done(self, key: DestinationKey, _task: asyncio.Task[None]) -> None:
        self._senders.pop(key, None)
        queued = self._queued.pop(key, [])
        self._claimed.difference_update(row.id for row in queued)
        poll, self._poll_when_done = self._poll_when_done, False
        self._give_back(queued, poll=poll)

    async def _send_rows(self, rows: list[OutboxRow]) -> None:
        """Send the rows in order; stop at one that is not finished (it waits for a retry)."""
        try:
            for row in rows:
                if row.id in self._withdrawn:
                    self._claimed.discard(row.id)  # taken back: marked dead by ``withdraw``
                    self._finished.keep(row.id, row.updated_at)
                    continue
                outcome = await self._send(row)
                self._claimed.discard(row.id)
                if outcome.retry_at is not None:
                    self._waits.retry_at(destination_key(row.item.delivery), outcome.retry_at)
                if not outcome.finished:
                    return
                self._finished.keep(row.id, row.updated_at)
        finally:
            self._claimed.difference_update(row.id for row in rows)

    async def cancel(self) -> None:
        """Cancel every sender at work (shutdown, after the flush)."""
        tasks = list(self._senders.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
