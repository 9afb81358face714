"""The outbox's scheduling: every reply is recorded, then sent in order per chat.

Operations for one chat go out strictly in the order they were recorded (text before files,
chunk 1 before chunk 2); a row that must wait holds back the rows behind it. Chats are
independent of each other: one sender task per chat at work, fed from memory and from store
polls, with timers for retry times. What one attempt does with a row (the call, the fallback
ladder, retry or dead letter) is ``bot.delivery.attempt``.

Crash recovery may ``reserve`` a row an earlier process left (a placeholder it must finish
itself): its chat then sends nothing until the row is ``release``d, and recovery attempts it
with ``resend``, so the row still goes first in its chat.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import heapq
import logging
from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime

from bot.delivery.attempt import AttemptOutcome, Attempts, RetryPolicy, destination_key
from bot.delivery.bounded import RecentSet, Until
from bot.delivery.holds import ChatHolds
from bot.delivery.ratelimit import DestinationKey, RateLimiter
from bot.errors import TransientSendError
from bot.hub import ChannelHub
from bot.messages import Delivery, SentRef
from bot.metrics import Counters
from bot.ports import Store
from bot.records import OutboxItem, OutboxRow, OutboxState

logger = logging.getLogger(__name__)

IDLE_POLL_S = 30.0
FINISHED_MEMORY = 4096


class Outbox:
    def __init__(  # noqa: PLR0913 - the kernel objects it works with
        self, store: Store, hub: ChannelHub, limiter: RateLimiter, counters: Counters,
        policy: RetryPolicy, *, holder: str | None = None,
    ) -> None:  # fmt: skip
        self._store = store
        self._holder = holder
        """On a shared store, the replica whose chats this outbox sends (``LeaseStore``)."""
        self._attempts = Attempts(store, hub, limiter, counters, policy)
        self._clock = policy.clock
        self._wake = asyncio.Event()
        self._changed = asyncio.Event()
        self._active: dict[DestinationKey, asyncio.Task[None]] = {}
        self._waiters: dict[int, list[asyncio.Future[SentRef | None]]] = {}
        """Callers waiting for a row's attempt (``send_now``, ``withdraw``)."""
        self._fresh: list[OutboxRow] = []
        self._waiting: dict[DestinationKey, list[OutboxRow]] = {}
        self._claimed: set[int] = set()
        """Rows being sent or waiting for their chat: a poll that sees them leaves them be."""
        self._finished: RecentSet[int] = RecentSet(FINISHED_MEMORY)
        """Rows this process finished recently, so a copy still in a queue is not resent."""
        self._poll = True
        self._repoll = False
        self._timers: list[datetime] = []
        self._alarm: asyncio.TimerHandle | None = None
        self._polling = False
        self._running = False
        self._last_poll = datetime.min.replace(tzinfo=UTC)
        """The time the latest store poll asked for due rows with."""
        self._attempting: set[int] = set()
        """Rows whose platform call is under way right now."""
        self._withdrawn: RecentSet[int] = RecentSet(FINISHED_MEMORY)
        """Rows taken back by ``withdraw``; a copy still in a queue is skipped."""
        self._held: Until[DestinationKey, datetime] = Until(lambda: self._last_poll)
        """Chats whose earlier row waits for a retry. Forgotten only once a poll at or after
        that time has run: until then the older row is in the store, not in hand, and a newer
        row of the chat sent directly would overtake it."""
        self._holds = ChatHolds()
        """Chats whose rows wait for crash recovery (``reserve``, ``paused``): the rows behind
        wait in the store."""

    # ------------------------------------------------------------------ producers

    async def submit(
        self, items: Sequence[OutboxItem], *, finishes: Sequence[int] = ()
    ) -> list[int]:
        """Record deliveries durably, then hand the new rows straight to the worker.

        ``finishes``: journal entries this reply answers, marked handled in the same write.
        """
        if not items and not finishes:
            return []
        rows = await self._store.outbox.enqueue_rows(items, finishes=finishes)
        self._hand_over([row for row in rows if row.state is OutboxState.PENDING])
        return [row.id for row in rows]

    async def send_now(self, item: OutboxItem) -> SentRef | None:
        """Record and wait for the first attempt; ``None`` if it failed or will retry later.

        Callers bound the wait with ``asyncio.timeout``; the row stays in the outbox either way.
        """
        (row,) = await self._store.outbox.enqueue_rows([item])
        if self._holds.is_reserved(row):
            await self._holds.until_released(row)  # crash recovery's row (see ``reserve``)
            return None
        if row.state is OutboxState.SENT:
            return SentRef(message_ids=row.sent_message_ids)
        if row.state is OutboxState.DEAD:
            return None
        with self._waiting_for(row.id) as future:
            self._hand_over([row])
            return await future

    def _hand_over(self, rows: list[OutboxRow]) -> None:
        """Start sending new rows at once, or leave them to the worker while it has rows or a
        store poll of its own in hand (it merges them in id order, which keeps chats in order)."""
        if not rows:
            return
        if not self._running or self._polling or self._poll or self._fresh:
            self._fresh.extend(rows)
            self._wake.set()
            return
        self._route({row.id: row for row in rows}, polled=set())

    async def withdraw(self, item: OutboxItem) -> SentRef | None:
        """Take back a delivery that is no longer wanted (a placeholder the final overtook).

        Not sent yet: it never will be (the row is marked dead) and ``None`` is returned. Being
        sent right now: its outcome is awaited. Sent: the message it made is returned, so the
        caller can finish it (edit it) instead of leaving it behind. A row crash recovery
        reserved is recovery's: ``None``, and the row is kept.
        """
        (row,) = await self._store.outbox.enqueue_rows([item])  # the row as it now stands
        if self._holds.is_reserved(row):
            return None
        if row.state is OutboxState.PENDING and row.id in self._finished:
            row = await self._store.outbox.get(row.id) or row  # its attempt ended meanwhile
        if row.state is not OutboxState.PENDING:
            sent = row.state is OutboxState.SENT
            return SentRef(message_ids=row.sent_message_ids) if sent else None
        if row.id in self._attempting:
            with self._waiting_for(row.id) as future:
                sent_ref = await future
            if sent_ref is not None:
                return sent_ref
        self._withdrawn.add(row.id)
        await self._store.outbox.mark_dead(row.id, "withdrawn: superseded by a later delivery")
        return None

    def mark_reachable(self, key: DestinationKey) -> None:
        """A chat that wrote to us again can be tried again after forbidden/not found."""
        self._attempts.mark_reachable(key)

    # ------------------------------------------------------------------ crash recovery

    def reserve(self, row: OutboxRow) -> None:
        """Keep a row an earlier process left for crash recovery, which attempts it itself
        (``resend``): until ``release``, its chat sends nothing, not even that row. A re-run
        shares its turn's keys, and must neither take the row back nor edit its message before
        recovery has: ``withdraw`` of the key answers ``None`` at once, ``send_now`` once the
        row is released (callers bound the wait, as for a chat held by a retry). Call it
        before the worker runs, so no poll takes the row first."""
        self._holds.reserve(row)

    def release(self, row: OutboxRow) -> None:
        """Recovery is done with a reserved row (sent, dead, or left in the store); once its
        chat has no other, the chat's rows go out again, in order, from a fresh poll."""
        if self._holds.release(row):
            self.repoll()

    @contextlib.contextmanager
    def paused(self, keys: Sequence[DestinationKey]) -> Iterator[None]:
        """Send nothing of these chats inside the block (a takeover withdraws or reserves the
        placeholders the previous holder left first); their rows are polled after it."""
        self._holds.pause(keys)
        try:
            yield
        finally:
            self._holds.unpause(keys)
            self.repoll()

    def repoll(self) -> None:
        """Look at the store again soon (chats this replica just took over)."""
        self._poll = True
        self._wake.set()

    async def resend(self, row: OutboxRow, delivery: Delivery) -> AttemptOutcome:
        """Attempt a reserved row once, sending ``delivery`` in place of what it recorded.

        The row keeps its id and idempotency key (so its ``dedupe_key``): a platform that
        dedupes sends answers with the message it took under that key. The outcome is recorded
        on the row as for any attempt; waiting for a retry is the caller's.
        """
        if destination_key(delivery) != destination_key(row.item.delivery):
            raise ValueError("a resend goes to the row's own chat")
        outcome = await self._attempt(replace(row, item=replace(row.item, delivery=delivery)))
        self._resolve(row.id, outcome.sent)
        return outcome

    async def _attempt(self, row: OutboxRow) -> AttemptOutcome:
        """One attempt; a bug in it is logged and counted as a transient failure of the row."""
        self._attempting.add(row.id)
        try:
            return await self._attempts.attempt(row)
        except Exception:
            logger.exception("outbox row %s failed unexpectedly", row.id)
            return await self._attempts.failed(row, TransientSendError("unexpected error"))
        finally:
            self._attempting.discard(row.id)

    # ------------------------------------------------------------------ worker

    async def run(self) -> None:
        """Send rows until cancelled.

        Rows recorded by this process reach the worker directly; the store is polled for
        rows whose retry time has come, rows left by an earlier process, and rows revived by
        ``switchboard outbox retry`` (at least every ``IDLE_POLL_S``).
        """
        self._poll = True
        self._running = True
        try:
            while True:
                self._wake.clear()
                await self._dispatch()
                await self._sleep()
        finally:
            self._running = False
            if self._alarm is not None:
                self._alarm.cancel()
                self._alarm = None

    async def _dispatch(self) -> None:
        fresh, self._fresh = self._fresh, []
        rows = {row.id: row for row in fresh}
        polled: set[int] = set()
        if self._poll:
            self._poll = False
            self._polling = True
            try:
                now = self._clock()
                for row in await self._store.outbox.due(now, limit=500, holder=self._holder):
                    rows.setdefault(row.id, row)
                    polled.add(row.id)
                self._last_poll = max(self._last_poll, now)
                next_due = await self._store.outbox.next_due_at(holder=self._holder)
            finally:
                self._polling = False
            if next_due is not None and next_due > self._clock():
                self._schedule(next_due)  # rows left waiting, also by an earlier process
        self._route(rows, polled)
        if fresh:
            # Rows in hand are now with a sender or back in the store (their chat waits for a
            # retry or for crash recovery): ``wait_idle`` must look again either way.
            self._changed.set()

    def _route(self, rows: dict[int, OutboxRow], polled: set[int]) -> None:
        """Start a sender per chat, or queue rows behind the chat's sender at work."""
        groups: dict[DestinationKey, list[OutboxRow]] = {}
        for row_id in sorted(i for i in rows if i not in self._claimed and i not in self._finished):
            row = rows[row_id]
            groups.setdefault(destination_key(row.item.delivery), []).append(row)
        for key, group in groups.items():
            if self._holds.kept_back(key) or self._held_until(key) is not None:
                continue  # in the store; polled again when the hold ends or on release
            if key in self._active:
                # Rows from this process wait in memory; polled ones are found by a new poll.
                waiting = [row for row in group if row.id not in polled]
                self._waiting.setdefault(key, []).extend(waiting)
                self._claimed.update(row.id for row in waiting)
                self._repoll |= any(row.id in polled for row in group)
                continue
            self._claimed.update(row.id for row in group)
            task = asyncio.create_task(self._send_group(group), name=f"outbox:{key[0]}:{key[2]}")
            self._active[key] = task
            task.add_done_callback(functools.partial(self._group_done, key))

    def _held_until(self, key: DestinationKey) -> datetime | None:
        """A chat whose earlier row waits for a retry sends nothing after it, to keep order."""
        until = self._held.get(key)
        if until is not None and until <= self._clock():
            # The wait is over, but the older row is still in the store: poll before sending.
            self._poll = True
            self._wake.set()
        return until

    def _group_done(self, key: DestinationKey, _task: asyncio.Task[None]) -> None:
        self._active.pop(key, None)
        waiting = self._waiting.pop(key, [])
        self._claimed.difference_update(row.id for row in waiting)
        self._fresh.extend(waiting)
        if self._repoll:
            self._repoll = False
            self._poll = True
        self._wake.set()
        self._changed.set()

    def _schedule(self, at: datetime) -> None:
        heapq.heappush(self._timers, at)

    async def _sleep(self) -> None:
        """Wait for new rows, a finished chat, or the next retry time (then poll the store)."""
        now = self._clock()
        while self._timers and self._timers[0] <= now:
            heapq.heappop(self._timers)
            self._poll = True
        if self._poll or self._fresh:
            return
        timeout = IDLE_POLL_S
        if self._timers:
            timeout = min(timeout, (self._timers[0] - now).total_seconds())
        self._arm(max(timeout, 0.001))
        await self._wake.wait()

    def _arm(self, delay_s: float) -> None:
        """Make sure an alarm rings within ``delay_s``; an earlier one already set will do.

        One long-lived timer instead of a timeout per wait: the worker waits once per row.
        """
        loop = asyncio.get_running_loop()
        at = loop.time() + delay_s
        if self._alarm is not None:
            if self._alarm.when() <= at:
                return
            self._alarm.cancel()
        self._alarm = loop.call_at(at, self._ring)

    def _ring(self) -> None:
        self._alarm = None
        self._poll = True
        self._wake.set()

    async def wait_idle(self) -> None:
        """Return once nothing is due or in flight (shutdown flush; bound it with a timeout)."""
        while self._active or self._fresh or self._waiting or await self._sendable_now():
            self._changed.clear()
            self._poll = True
            self._wake.set()
            await self._changed.wait()

    async def _sendable_now(self) -> bool:
        """Whether the store holds a due row of a chat that is not waiting for a retry (or for
        crash recovery)."""
        rows = await self._store.outbox.due(self._clock(), limit=500, holder=self._holder)
        keys = {destination_key(row.item.delivery) for row in rows}
        return any(not self._holds.kept_back(key) and self._held_until(key) is None for key in keys)

    async def cancel_active(self) -> None:
        tasks = list(self._active.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _send_group(self, rows: list[OutboxRow]) -> None:
        try:
            for row in rows:
                if row.id in self._withdrawn:
                    self._claimed.discard(row.id)  # taken back: marked dead by ``withdraw``
                    self._finished.add(row.id)
                    continue
                outcome = await self._attempt(row)
                self._claimed.discard(row.id)
                if outcome.retry_at is not None:
                    self._hold(destination_key(row.item.delivery), outcome.retry_at)
                self._resolve(row.id, outcome.sent)
                if not outcome.finished:
                    return
                self._finished.add(row.id)
        finally:
            self._claimed.difference_update(row.id for row in rows)

    def _hold(self, key: DestinationKey, until: datetime) -> None:
        """The chat sends nothing after a row that waits for a retry, to keep its order."""
        self._held.extend(key, until)
        self._schedule(until)

    @contextlib.contextmanager
    def _waiting_for(self, row_id: int) -> Iterator[asyncio.Future[SentRef | None]]:
        """A future resolved with the row's next attempt (its message, or ``None``)."""
        future: asyncio.Future[SentRef | None] = asyncio.get_running_loop().create_future()
        waiters = self._waiters.setdefault(row_id, [])
        waiters.append(future)
        try:
            yield future
        finally:
            waiters.remove(future)
            if not waiters:
                del self._waiters[row_id]

    def _resolve(self, row_id: int, ref: SentRef | None) -> None:
        for future in self._waiters.get(row_id, ()):
            if not future.done():
                future.set_result(ref)
