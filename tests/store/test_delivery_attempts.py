"""The append-only record of platform calls per outbox row, and the migration that adds it."""

from __future__ import annotations

from pathlib import Path

import aiosqlite

from bot.records import ATTEMPT_SENT, DeliveryAttempt, OutboxState
from store.schema import load_migrations
from store.sqlite import SqliteStore
from tests.store.support import START, ManualClock, enqueue, item


async def test_attempts_are_kept_in_order_with_the_store_clock(
    store: SqliteStore, clock: ManualClock
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


async def test_reviving_a_dead_row_keeps_its_history(store: SqliteStore) -> None:
    (row_id,) = await enqueue(store, [item("k1")])
    await store.outbox.record_attempt(row_id, "forbidden", "blocked")
    await store.outbox.mark_dead(row_id, "forbidden: blocked")
    assert await store.outbox.revive([row_id]) == 1
    await store.outbox.record_attempt(row_id, ATTEMPT_SENT, "b1")
    outcomes = [attempt.outcome for attempt in await store.outbox.attempts(row_id)]
    assert outcomes == ["forbidden", ATTEMPT_SENT]


async def test_purging_a_row_takes_its_history_so_a_reused_id_starts_clean(
    store: SqliteStore,
) -> None:
    (row_id,) = await enqueue(store, [item("k1")])
    await store.outbox.record_attempt(row_id, ATTEMPT_SENT, "b1")
    await store.outbox.mark_sent(row_id, ("b1",))
    assert await store.outbox.purge(OutboxState.SENT) == 1
    (reused,) = await enqueue(store, [item("k2")])
    assert reused == row_id  # SQLite hands out the freed rowid again
    assert await store.outbox.attempts(reused) == []


async def test_a_schema_1_database_gains_the_table_on_open(
    db_path: Path, clock: ManualClock
) -> None:
    first = load_migrations()[0]
    db_path.parent.mkdir(parents=True)
    async with aiosqlite.connect(db_path) as raw:
        for statement in first.statements:
            await raw.execute(statement)
        await raw.execute("PRAGMA user_version = 1")
        await raw.commit()
    async with SqliteStore(db_path, clock=clock) as store:
        (row_id,) = await enqueue(store, [item("k1")])
        await store.outbox.record_attempt(row_id, "transient", "502")
        assert [a.detail for a in await store.outbox.attempts(row_id)] == ["502"]
