"""A resumed run a crash cut off (claimed, never finished) is found and reclaimed once, on
both backends (design §24 "Durable")."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from tests.store.support import START, BackendStore
from tests.store.test_approvals import added, approve, paused


async def _claimed(store: BackendStore) -> None:
    (first, second) = await added(store, paused())
    assert await store.approvals.decide(first.id, approve())
    assert await store.approvals.decide(second.id, approve())
    assert await store.approvals.claim_run("r1", START + timedelta(minutes=1))


async def test_a_claimed_run_is_unfinished_until_its_turn_ends(store: BackendStore) -> None:
    await _claimed(store)
    restart = START + timedelta(minutes=2)
    assert [run.id for run in await store.approvals.unfinished_runs(restart)] == ["r1"]
    assert await store.approvals.unfinished_runs(START + timedelta(seconds=30)) == []
    await store.approvals.finish_run("r1", restart)
    assert await store.approvals.unfinished_runs(restart) == []
    found = await store.approvals.run("r1")
    assert found is not None
    assert found[0].finished_at == restart


async def test_a_cut_off_run_is_reclaimed_by_one_caller(store: BackendStore) -> None:
    await _claimed(store)
    claimed = START + timedelta(minutes=1)
    now = START + timedelta(minutes=3)
    wins = await asyncio.gather(
        store.approvals.reclaim("r1", claimed, now),
        store.approvals.reclaim("r1", claimed, now + timedelta(seconds=1)),
    )
    assert sorted(wins) == [False, True]
    assert not await store.approvals.reclaim("r1", claimed, now)  # the claim moved on
    await store.approvals.finish_run("r1", now)
    found = await store.approvals.run("r1")
    assert found is not None
    assert found[0].resumed_at is not None
    assert not await store.approvals.reclaim("r1", found[0].resumed_at, now)  # finished
