"""The outbox worker loop: rows this process hands over, and rows a store poll finds.

Rows recorded by this process reach the worker directly. The store is polled for rows whose
retry time has come, rows left by an earlier process, and rows revived by ``switchboard
outbox retry``: when asked to (a hold ended, chats were taken over), at the retry times it
knows of, and at least every ``IDLE_POLL_S``. Both kinds of row meet in ``ChatQueues.route``
in id order, which keeps each chat's order.
"""

from __future__ import annotations

import asyncio
import heapq
from collections.abc import Callable
from datetime import datetime

from bot.delivery.attempt import destination_key
from bot.delivery.outbox_queues import ChatQueues
from bot.delivery.waits import ChatWaits
from bot.ports import Store
from bot.records import OutboxRow

IDLE_POLL_S = 30.0
POLL_LIMIT = 500


class PollTimes:
    """When the worker polls the store next, and the event that wakes it."""

    def __init__(self, clock: Callable[[], datetime]) -> None:
        self._clock = clock
        self._wake = asyncio.Event()
        self._asked = True
        """A poll is due as soon as the worker gets to it."""
        self._times: list[datetime] = []
        """A heap of the retry times the worker knows of."""
        self._alarm: asyncio.TimerHandle | None = None

    @property
    def asked(self) -> bool:
        return self._asked

    def soon(self) -> None:
        """Look at the store again soon (a hold ended, chats were taken over)."""
        self._asked = True
        self._wake.set()

    def at(self, when: datetime) -> None:
        """Poll at ``when`` (a row's retry time)."""
        heapq.heappush(self._times, when)

    def wake(self) -> None:
        """Rows are in hand: the worker should route them."""
        self._wake.set()

    def take(self) -> bool:
        """Whether a poll is due now; the worker runs it."""
        asked, self._asked = self._asked, False
        return asked

    def start_round(self) -> None:
        """The worker is about to look at what it has: wake-ups from now on count."""
        self._wake.clear()

    async def sleep(self, *, rows_in_hand: bool) -> None:
        """Wait for rows in hand, a request, or the next retry time (then a poll is due)."""
        now = self._clock()
        while self._times and self._times[0] <= now:
            heapq.heappop(self._times)
            self._asked = True
        if self._asked or rows_in_hand:
            return
        timeout = IDLE_POLL_S
        if self._times:
            timeout = min(timeout, (self._times[0] - now).total_seconds())
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
        self.soon()

    def disarm(self) -> None:
        if self._alarm is not None:
            self._alarm.cancel()
            self._alarm = None


class PollLoop:
    """The worker: routes the rows in hand and the rows store polls find to the chats."""

    def __init__(  # noqa: PLR0913 - the parts of the outbox it drives
        self,
        store: Store,
        times: PollTimes,
        holds: ChatWaits,
        queues: ChatQueues,
        *,
        clock: Callable[[], datetime],
        holder: str | None,
    ) -> None:
        self._store = store
        self._times = times
        self._waits = holds
        self._queues = queues
        self._clock = clock
        self._holder = holder
        """On a shared store, the replica whose chats this outbox sends (``LeaseStore``)."""
        self._in_hand: list[OutboxRow] = []
        """Rows handed over (or given back by a sender) that are not routed yet."""
        self._polling = False
        self._running = False
        self._changed = asyncio.Event()
        """Set when rows in hand were routed or a sender finished (``wait_idle`` looks again)."""

    async def run(self) -> None:
        self._times.soon()
        self._running = True
        try:
            while True:
                self._times.start_round()
                await self._dispatch()
                await self._times.sleep(rows_in_hand=bool(self._in_hand))
        finally:
            self._running = False
            self._times.disarm()

    def hand_over(self, rows: list[OutboxRow]) -> None:
        """Start sending new rows at once, or leave them to the worker while it has rows or a
        store poll of its own in hand (it merges them in id order, which keeps chats in order)."""
        if not rows:
            return
        if not self._running or self._polling or self._times.asked or self._in_hand:
            self._in_hand.extend(rows)
            self._times.wake()
            return
        self._queues.route({row.id: row for row in rows}, polled=set())

    def give_back(self, rows: list[OutboxRow], *, poll: bool) -> None:
        """A chat's sender finished: route the rows queued behind it again."""
        self._in_hand.extend(rows)
        if poll:
            self._times.soon()
        self._times.wake()
        self._changed.set()

    async def _dispatch(self) -> None:
        in_hand, self._in_hand = self._in_hand, []
        rows = {row.id: row for row in in_hand}
        polled: set[int] = set()
        if self._times.take():
            for row in await self._poll():
                rows.setdefault(row.id, row)
                polled.add(row.id)
        self._queues.route(rows, polled)
        if in_hand:
            # Rows in hand are now with a sender or back in the store (their chat is held):
            # ``wait_idle`` must look again either way.
            self._changed.set()

    async def _poll(self) -> list[OutboxRow]:
        """The due rows; a later retry time found in the store is polled at."""
        self._polling = True
        try:
            now = self._clock()
            due = await self._store.outbox.due(now, limit=POLL_LIMIT, holder=self._holder)
            self._waits.polled(now)
            next_due = await self._store.outbox.next_due_at(holder=self._holder)
        finally:
            self._polling = False
        if next_due is not None and next_due > now:
            # Rows left waiting, also by an earlier process. Compared with the time the due
            # rows were asked with, not the clock after both queries: a row that came due
            # in between is in neither answer, and would wait for the idle poll.
            self._times.at(next_due)
        return due

    async def wait_idle(self) -> None:
        """Return once nothing is due or in flight (shutdown flush; bound it with a timeout)."""
        while self._queues.busy or self._in_hand or await self._sendable_now():
            self._changed.clear()
            self._times.soon()
            await self._changed.wait()

    async def _sendable_now(self) -> bool:
        """Whether the store holds a due row of a chat that is not held."""
        rows = await self._store.outbox.due(self._clock(), limit=POLL_LIMIT, holder=self._holder)
        keys = {destination_key(row.item.delivery) for row in rows}
        return any(not self._waits.keeps_waiting(key) for key in keys)
