"""Approvals on both backends: a paused run and its approvals recorded together, each decided
once (of two deciders on two stores, one wins; never after its expiry), the run claimed once
when none is pending, expiry and cancellation moving only what is still pending, and the
listings the console and ``trace`` read."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import UTC, datetime, timedelta, timezone

import pytest

from bot.errors import StoreError
from bot.messages import ChatType, ConversationKey
from bot.ports.approvals import Approval, ApprovalRun, ApprovalState, Decided, approvals_of
from store.approvals import SqlApprovalStore
from tests.store.support import START, BackendStore, StoreFactory, key

TTL = timedelta(minutes=30)
TOPIC = key("c1", topic_id="t9")


def paused(
    run_id: str = "r1",
    *,
    at: datetime = START,
    conversation: ConversationKey = TOPIC,
    thread: str = "th-1",
    correlation: str = "corr-1",
) -> ApprovalRun:
    return ApprovalRun(
        id=run_id, key=conversation, chat_type=ChatType.GROUP, thread_id=thread,
        correlation_id=correlation, created_at=at,
    )  # fmt: skip


def action(run: ApprovalRun, position: int, *, ttl: timedelta = TTL) -> Approval:
    return Approval(
        id=f"{run.id}-a{position}", run_id=run.id, position=position, key=run.key,
        chat_type=run.chat_type, thread_id=run.thread_id, asker_id="u1", tool="send_email",
        args='{"to": "ada@example.com", "subject": "Grüße"}', description=f"send #{position}",
        allowed=("approve", "edit", "reject"), deciders="users:u1,u2",
        created_at=run.created_at, expires_at=run.created_at + ttl,
    )  # fmt: skip


async def added(store: BackendStore, run: ApprovalRun, count: int = 2) -> list[Approval]:
    approvals = [action(run, n) for n in range(count)]
    await store.approvals.add(run, approvals)
    return approvals


def approve(by: str = "telegram:u2", *, at: datetime = START) -> Decided:
    return Decided(state=ApprovalState.APPROVED, by=by, by_name=f"name of {by}", at=at)


async def test_a_run_and_its_approvals_read_back_in_position_order(store: BackendStore) -> None:
    assert isinstance(approvals_of(store), SqlApprovalStore)  # the daemon finds them
    run = paused()
    second, first = action(run, 1), action(run, 0)
    await store.approvals.add(run, [second, first])  # recorded out of order on purpose
    assert await store.approvals.run("r1") == (run, [first, second])
    assert await store.approvals.get("r1-a1") == second
    assert await store.approvals.get("nope") is None
    assert await store.approvals.run("nope") is None
    await store.approvals.set_message("r1-a0", "m42")
    found = await store.approvals.get("r1-a0")
    assert found == dataclasses.replace(first, message_id="m42")


async def test_times_keep_their_microseconds_and_come_back_in_utc(store: BackendStore) -> None:
    at = datetime(2025, 3, 1, 14, 0, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
    run = paused(at=at)
    await added(store, run, 1)
    found = await store.approvals.get("r1-a0")
    assert found is not None
    assert found.created_at == at
    assert found.created_at.tzinfo is UTC
    assert (found.created_at.hour, found.created_at.microsecond) == (12, 123456)
    with pytest.raises(ValueError, match="naive"):
        await added(store, paused("r2", at=at.replace(tzinfo=None)), 1)


async def test_add_records_nothing_when_any_approval_cannot_be_recorded(
    store: BackendStore,
) -> None:
    await added(store, paused("r1"), 1)
    run = paused("r2")
    taken = dataclasses.replace(action(run, 1), id="r1-a0")  # another run's approval id
    with pytest.raises(StoreError):
        await store.approvals.add(run, [action(run, 0), taken])
    assert await store.approvals.run("r2") is None
    assert await store.approvals.get("r2-a0") is None


async def test_add_refuses_a_run_without_approvals_or_with_another_runs(
    store: BackendStore,
) -> None:
    run = paused()
    with pytest.raises(ValueError, match="has no approvals"):
        await store.approvals.add(run, [])
    with pytest.raises(ValueError, match="belongs to run 'r2', not to 'r1'"):
        await store.approvals.add(run, [action(paused("r2"), 0)])
    assert await store.approvals.run("r1") is None


async def test_decide_changes_a_pending_approval_once(store: BackendStore) -> None:
    (first, _) = await added(store, paused())
    edit = Decided(
        state=ApprovalState.EDITED, by="slack:U2", by_name="Grace", at=START + timedelta(minutes=1),
        args='{"to": "grace@example.com"}', reason=None,
    )  # fmt: skip
    assert await store.approvals.decide(first.id, edit)
    assert not await store.approvals.decide(first.id, approve(at=START + timedelta(minutes=2)))
    assert await store.approvals.get(first.id) == dataclasses.replace(
        first, state=ApprovalState.EDITED, decided_by="slack:U2", decided_by_name="Grace",
        decided_at=START + timedelta(minutes=1), decided_args='{"to": "grace@example.com"}',
    )  # fmt: skip
    assert not await store.approvals.decide("nope", approve())


async def test_decide_changes_nothing_once_the_approval_has_expired(store: BackendStore) -> None:
    (first, second) = await added(store, paused())
    assert not await store.approvals.decide(first.id, approve(at=first.expires_at))
    rejected = Decided(
        state=ApprovalState.REJECTED, by="cli:ops", by_name="ops", reason="too late",
        at=first.expires_at - timedelta(microseconds=1),
    )  # fmt: skip
    assert await store.approvals.decide(second.id, rejected)
    assert await store.approvals.get(first.id) == first  # still pending, for the sweep
    found = await store.approvals.get(second.id)
    assert found is not None
    assert (found.state, found.reason) == (ApprovalState.REJECTED, "too late")


async def test_of_two_stores_deciding_one_approval_at_once_one_wins(
    store: BackendStore, make_store: StoreFactory
) -> None:
    (first, _) = await added(store, paused())
    async with make_store() as other:
        results = await asyncio.gather(
            *(
                s.approvals.decide(first.id, approve(by))
                for s, by in ((store, "telegram:u1"), (other, "telegram:u2"))
                for _ in range(2)
            )
        )
    assert sorted(results) == [False, False, False, True]
    found = await store.approvals.get(first.id)
    assert found is not None
    assert found.state is ApprovalState.APPROVED
    winner = ["telegram:u1", "telegram:u1", "telegram:u2", "telegram:u2"][results.index(True)]
    assert found.decided_by == winner


async def test_a_run_is_claimed_once_and_only_when_none_is_pending(store: BackendStore) -> None:
    (first, second) = await added(store, paused())
    later = START + timedelta(minutes=1)
    assert await store.approvals.decide(first.id, approve())
    assert not await store.approvals.claim_run("r1", later)
    cancelled = await store.approvals.cancel_thread("th-1")
    assert [a.id for a in cancelled] == [second.id]
    assert await store.approvals.claim_run("r1", later)
    assert not await store.approvals.claim_run("r1", later + timedelta(minutes=1))
    assert not await store.approvals.claim_run("nope", later)
    found = await store.approvals.run("r1")
    assert found is not None
    assert found[0].resumed_at == later


async def test_of_the_deciders_of_a_runs_last_two_approvals_one_claims_it(
    store: BackendStore, make_store: StoreFactory
) -> None:
    """Two replicas each decide one of a run's last two approvals at once, then claim it:
    whichever order their statements land in, exactly one resumes the run."""
    runs = [paused(f"r{n}") for n in range(4)]
    for run in runs:
        await added(store, run)

    async def decide_then_claim(on: BackendStore, approval_id: str, run_id: str) -> bool:
        assert await on.approvals.decide(approval_id, approve())
        return await on.approvals.claim_run(run_id, START + timedelta(minutes=1))

    async with make_store() as other:
        claims = await asyncio.gather(
            *(
                decide_then_claim(on, f"{run.id}-a{n}", run.id)
                for run in runs
                for on, n in ((store, 0), (other, 1))
            )
        )
    assert [claims[i : i + 2].count(True) for i in range(0, len(claims), 2)] == [1, 1, 1, 1]


async def test_expire_due_moves_only_pending_approvals_past_their_expiry(
    store: BackendStore,
) -> None:
    early, late = paused("r1"), paused("r2", at=START + timedelta(minutes=10))
    (e0, e1, e2) = await added(store, early, 3)
    (l0,) = await added(store, late, 1)
    assert await store.approvals.decide(e1.id, approve())
    at_expiry = e0.expires_at
    expired = await store.approvals.expire_due(at_expiry)
    assert expired == [dataclasses.replace(a, state=ApprovalState.EXPIRED) for a in (e0, e2)]
    assert await store.approvals.expire_due(at_expiry) == []
    assert await store.approvals.get(l0.id) == l0
    assert await store.approvals.claim_run("r1", at_expiry)  # expired ones are not pending


async def test_cancel_thread_moves_only_that_threads_pending_approvals(
    store: BackendStore,
) -> None:
    (first, second) = await added(store, paused("r1"))
    (elsewhere,) = await added(store, paused("r2", thread="th-2"), 1)
    assert await store.approvals.decide(first.id, approve())
    cancelled = await store.approvals.cancel_thread("th-1")
    assert cancelled == [dataclasses.replace(second, state=ApprovalState.CANCELLED)]
    assert await store.approvals.cancel_thread("th-1") == []
    assert await store.approvals.get(elsewhere.id) == elsewhere
    found = await store.approvals.get(first.id)
    assert found is not None
    assert found.state is ApprovalState.APPROVED
    assert not await store.approvals.decide(second.id, approve())


async def test_listed_is_newest_first_by_state_and_conversation(store: BackendStore) -> None:
    other_chat = key("c2")
    old = await added(store, paused("r1"))
    new = await added(store, paused("r2", at=START + timedelta(minutes=5), conversation=other_chat))
    assert await store.approvals.decide(old[1].id, approve())
    listed = await store.approvals.listed()
    assert [a.id for a in listed] == ["r2-a1", "r2-a0", "r1-a1", "r1-a0"]
    pending = await store.approvals.listed(state=ApprovalState.PENDING)
    assert [a.id for a in pending] == ["r2-a1", "r2-a0", "r1-a0"]
    in_topic = await store.approvals.listed(state=ApprovalState.PENDING, key=TOPIC)
    assert in_topic == [old[0]]
    assert await store.approvals.listed(key=other_chat, limit=1) == [new[1]]
    assert await store.approvals.listed(key=key("c3")) == []
    with pytest.raises(ValueError, match="limit must be at least 1"):
        await store.approvals.listed(limit=0)


async def test_for_correlation_gives_that_turns_approvals_by_run_then_position(
    store: BackendStore,
) -> None:
    later = START + timedelta(minutes=1)
    second_run = await added(store, paused("r-b", at=later, correlation="corr-1"), 2)
    first_run = await added(store, paused("r-a", correlation="corr-1"), 2)
    await added(store, paused("r-other", correlation="corr-2"), 1)
    assert await store.approvals.for_correlation("corr-1") == first_run + second_run
    assert await store.approvals.for_correlation("corr-none") == []
