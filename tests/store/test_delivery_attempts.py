"""The append-only record of platform calls per outbox row."""

from __future__ import annotations

from bot.records import ATTEMPT_SENT, DeliveryAttempt, OutboxState
from tests.store.support import START, BackendStore, ManualClock, enqueue, item


async def test_attempts_are_kept_in_order_with_the_store_clock(
    store: BackendStore, clock: ManualClock
) -> None:
    row_id, other_id = await enqueue(store, [item("k1"), item("k2")])
    await store.outbox.record_attempt(row_id, "rate_limited", "429 slow down")
    later = clock.advance(2.5)
    await store.outbox.record_attempt(row_id, ATTEMPT_SENT, "b1 b2")
    assert await store.outbox.attempts(row_id) == [
        DeliveryAttempt(row_id=row_id, at=START, outcome="rate_limited", detail="429 slow down"),
        DeliveryAttempt(row_id=row_id, at=later, outcome=ATTEMPT_SENT, detail="b1 b2"),
    ]
    assert await store.outbox.attempts(other_id) == []


async def test_reviving_a_dead_row_keeps_its_history(store: BackendStore) -> None:
    (row_id,) = await enqueue(store, [item("k1")])
    await store.outbox.record_attempt(row_id, "forbidden", "blocked")
    await store.outbox.mark_dead(row_id, "forbidden: blocked")
    assert await store.outbox.revive([row_id]) == 1
    await store.outbox.record_attempt(row_id, ATTEMPT_SENT, "b1")
    outcomes = [attempt.outcome for attempt in await store.outbox.attempts(row_id)]
    assert outcomes == ["forbidden", ATTEMPT_SENT]


async def test_purging_a_row_takes_its_history_so_a_reused_id_starts_clean(
    store: BackendStore,
) -> None:
    """SQLite hands out a freed rowid again (PostgreSQL never does): whichever, the new row
    never inherits the purged one's history."""
    (row_id,) = await enqueue(store, [item("k1")])
    await store.outbox.record_attempt(row_id, ATTEMPT_SENT, "b1")
    await store.outbox.mark_sent(row_id, ("b1",))
    assert await store.outbox.purge(OutboxState.SENT) == 1
    assert await store.outbox.attempts(row_id) == []
    (new_id,) = await enqueue(store, [item("k2")])
    assert await store.outbox.attempts(new_id) == []


async def test_marking_a_row_sent_records_the_call(store: BackendStore, clock: ManualClock) -> None:
    (row_id,) = await enqueue(store, [item("k1")])
    sent_at = clock.advance(1)
    await store.outbox.mark_sent(row_id, ("b1", "b2"))
    assert await store.outbox.attempts(row_id) == [
        DeliveryAttempt(row_id=row_id, at=sent_at, outcome=ATTEMPT_SENT, detail="b1 b2")
    ]
    await store.outbox.mark_sent(row_id, ("b1", "b2"))  # already sent: no second record
    assert len(await store.outbox.attempts(row_id)) == 1
