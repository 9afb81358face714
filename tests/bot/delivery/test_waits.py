"""The outbox's parts on their own: chat waits, the poll times they ask for, and the callers
waiting for a row's attempt."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from bot.delivery.outbox_polls import PollTimes
from bot.delivery.outbox_waiters import AttemptWaiters
from bot.delivery.waits import ChatWaits
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


def _parts() -> tuple[ManualClock, PollTimes, ChatWaits]:
    clock = ManualClock(START)
    times = PollTimes(clock)
    times.take()  # the first poll, as the worker runs it
    return clock, times, ChatWaits(clock, times)


def test_a_retry_holds_its_chat_until_a_poll_at_its_time_has_run() -> None:
    clock, times, waits = _parts()
    waits.retry_at(CHAT, START + timedelta(seconds=5))
    assert waits.keeps_waiting(CHAT)
    assert not times.take()
    clock.now = START + timedelta(seconds=5)
    assert waits.keeps_waiting(CHAT)  # due, but the row is still in the store
    assert times.take()  # so a poll is asked for
    waits.polled(START + timedelta(seconds=4))
    assert waits.keeps_waiting(CHAT)
    waits.polled(START + timedelta(seconds=5))
    assert not waits.keeps_waiting(CHAT)
    assert not waits.keeps_waiting(("other", "", "c1"))


async def test_a_reservation_ends_with_its_last_row_and_a_poll() -> None:
    _, times, waits = _parts()
    first, second = _row(1), _row(2)
    waits.reserve(first)
    waits.reserve(second)
    assert waits.keeps_waiting(CHAT)
    assert waits.is_reserved(first)
    waiting = asyncio.create_task(waits.until_released(first), name="test:released")
    waits.release(first)
    await asyncio.wait_for(waiting, 1)
    assert waits.keeps_waiting(CHAT)  # the second row is still recovery's
    assert not times.take()
    waits.release(second)
    assert not waits.keeps_waiting(CHAT)
    assert times.take()


def test_overlapping_pauses_hold_until_the_last_one_ends() -> None:
    _, times, waits = _parts()
    with waits.paused([CHAT]):
        with waits.paused([CHAT]):
            assert waits.keeps_waiting(CHAT)
        assert waits.keeps_waiting(CHAT)
        times.take()
    assert not waits.keeps_waiting(CHAT)
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
