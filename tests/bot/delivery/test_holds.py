"""The outbox's parts on their own: chat holds, the poll times they ask for, and the callers
waiting for a row's attempt."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from bot.delivery.holds import ChatHolds
from bot.delivery.outbox_polls import PollTimes
from bot.delivery.outbox_waiters import AttemptWaiters
from bot.messages import ChatType, Destination, OutboundKind, OutboundText, SentRef
from bot.records import OutboxItem, OutboxRow, OutboxState
from tests.store.support import START, ManualClock, key

CHAT = ("fake", "", "c1")


def _row(row_id: int) -> OutboxRow:
    destination = Destination(channel="fake", chat_id="c1", chat_type=ChatType.DM)
    item = OutboxItem(
        idempotency_key=f"reply-{row_id}",
        delivery=OutboundText(destination=destination, text="hi", kind=OutboundKind.FINAL),
        key=key(channel="fake"),
        thread_id="t1",
        correlation_id=f"corr-{row_id}",
    )
    return OutboxRow(
        id=row_id, item=item, state=OutboxState.PENDING, attempts=0, next_attempt_at=START,
        last_error=None, sent_message_ids=(), created_at=START, updated_at=START,
    )  # fmt: skip


def _parts() -> tuple[ManualClock, PollTimes, ChatHolds]:
    clock = ManualClock(START)
    times = PollTimes(clock)
    times.take()  # the first poll, as the worker runs it
    return clock, times, ChatHolds(clock, times)


def test_a_retry_holds_its_chat_until_a_poll_at_its_time_has_run() -> None:
    clock, times, holds = _parts()
    holds.retry_at(CHAT, START + timedelta(seconds=5))
    assert holds.holds_back(CHAT)
    assert not times.take()
    clock.now = START + timedelta(seconds=5)
    assert holds.holds_back(CHAT)  # due, but the row is still in the store
    assert times.take()  # so a poll is asked for
    holds.polled(START + timedelta(seconds=4))
    assert holds.holds_back(CHAT)
    holds.polled(START + timedelta(seconds=5))
    assert not holds.holds_back(CHAT)
    assert not holds.holds_back(("other", "", "c1"))


async def test_a_reservation_ends_with_its_last_row_and_a_poll() -> None:
    _, times, holds = _parts()
    first, second = _row(1), _row(2)
    holds.reserve(first)
    holds.reserve(second)
    assert holds.holds_back(CHAT)
    assert holds.is_reserved(first)
    waiting = asyncio.create_task(holds.until_released(first), name="test:released")
    holds.release(first)
    await asyncio.wait_for(waiting, 1)
    assert holds.holds_back(CHAT)  # the second row is still recovery's
    assert not times.take()
    holds.release(second)
    assert not holds.holds_back(CHAT)
    assert times.take()


def test_overlapping_pauses_hold_until_the_last_one_ends() -> None:
    _, times, holds = _parts()
    with holds.paused([CHAT]):
        with holds.paused([CHAT]):
            assert holds.holds_back(CHAT)
        assert holds.holds_back(CHAT)
        times.take()
    assert not holds.holds_back(CHAT)
    assert times.take()


async def test_waiters_learn_the_outcome_of_the_rows_next_attempt() -> None:
    waiters = AttemptWaiters()
    ref = SentRef(message_ids=("m1",))
    with waiters.attempting(7):
        assert waiters.under_way(7)
        with waiters.waiting_for(7) as first, waiters.waiting_for(7) as second:
            waiters.resolve(8, None)  # another row's attempt
            assert not first.done()
            waiters.resolve(7, ref)
            assert await first == ref
            assert await second == ref
    assert not waiters.under_way(7)
    waiters.resolve(7, None)  # nobody waits any more: nothing to do
