"""The outbox worker's store polls (``bot.delivery.outbox_polls``): when it looks again."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from pathlib import Path

from bot.delivery.attempt import AttemptOutcome
from bot.delivery.outbox_polls import PollLoop, PollTimes
from bot.delivery.outbox_queues import ChatQueues
from bot.delivery.waits import ChatWaits
from bot.messages import OutboundKind, utc_now
from bot.records import OutboxRow
from store.sqlite import SqliteStore
from tests.bot.pipeline.crashed import recorded_before_the_crash

STEP = timedelta(milliseconds=200)


class BusyClock:
    """Wall time on a busy machine: every reading finds it moved on by ``STEP``."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        self.now += STEP
        return self.now


async def test_a_row_that_comes_due_while_the_poll_runs_is_polled_for_at_once(
    tmp_path: Path,
) -> None:
    """The row is not due when the poll asks for due rows, and due by the time it asks when
    the next one is: the worker looks again then, not at the idle poll 30 s later (a push
    refused before a kill -9 waited for it after the restart)."""
    clock = BusyClock(utc_now())
    sent = asyncio.Event()

    async def send(_row: OutboxRow) -> AttemptOutcome:
        sent.set()
        return AttemptOutcome(finished=True)

    async with SqliteStore.from_state_dir(tmp_path) as store:
        row = await recorded_before_the_crash(store, "corr1/final/0", "pushed", OutboundKind.FINAL)
        # Due between the poll's first reading of the clock (+1 step) and its second (+2).
        await store.outbox.mark_retry(row.id, "rate_limited", clock.now + STEP * 1.5)
        times = PollTimes(clock)
        holds = ChatWaits(clock, times)
        loops: list[PollLoop] = []

        def give_back(rows: list[OutboxRow], *, poll: bool) -> None:
            loops[0].give_back(rows, poll=poll)

        queues = ChatQueues(holds, send, give_back)
        worker = PollLoop(store, times, holds, queues, clock=clock, holder=None)
        loops.append(worker)
        task = asyncio.create_task(worker.run(), name="outbox-worker")
        try:
            async with asyncio.timeout(10):
                await sent.wait()
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
