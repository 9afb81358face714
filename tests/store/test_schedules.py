"""The schedules table on both backends: add within limits, list, cancel, and the claim that
makes each firing happen once (design §19 "Schedules")."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from bot.messages import ChatType
from bot.ports.schedules import (
    Firing,
    FiringOutcome,
    NewSchedule,
    ScheduleAction,
    ScheduleRefused,
    ScheduleState,
    ScheduleTarget,
)
from tests.store.support import START, BackendStore, StoreFactory

TARGET = ScheduleTarget(
    channel="telegram", account_id="bot", chat_id="c1", chat_type=ChatType.GROUP, topic_id="7"
)
DUE = START + timedelta(minutes=5)


def new(chat_id: str = "c1", *, cron: str | None = None) -> NewSchedule:
    target = ScheduleTarget(
        channel=TARGET.channel, account_id=TARGET.account_id, chat_id=chat_id,
        chat_type=TARGET.chat_type, topic_id=TARGET.topic_id,
    )  # fmt: skip
    return NewSchedule(
        target=target, action=ScheduleAction.MESSAGE, text="stand-up", at=None if cron else DUE,
        cron=cron, timezone="Europe/Berlin", misfire_grace_s=300, next_fire_at=DUE,
        created_by="cli:ops",
    )  # fmt: skip


def claim(schedule_id: int, replica: str = "a") -> Firing:
    return Firing(
        schedule_id=schedule_id, due_at=DUE, outcome=FiringOutcome.CLAIMED, replica=replica,
        delivery_id=None, at=DUE,
    )  # fmt: skip


async def test_a_schedule_reads_back_as_it_was_added(store: BackendStore) -> None:
    added = await store.schedules.add(new(), max_per_chat=5, max_total=10)
    assert added == await store.schedules.get(added.id)
    assert added.target == TARGET
    assert (added.state, added.at, added.next_fire_at) == (ScheduleState.ACTIVE, DUE, DUE)
    assert await store.schedules.listed(channel="telegram", chat_id="c1") == [added]
    assert await store.schedules.listed(channel="telegram", chat_id="other") == []
    counts = await store.schedules.counts()
    assert (counts.active, counts.next_fire_at) == (1, DUE)


async def test_limits_per_chat_and_in_total_refuse_more(store: BackendStore) -> None:
    await store.schedules.add(new(), max_per_chat=1, max_total=2)
    with pytest.raises(ScheduleRefused, match="max_per_chat"):
        await store.schedules.add(new(), max_per_chat=1, max_total=2)
    await store.schedules.add(new("c2"), max_per_chat=1, max_total=2)
    with pytest.raises(ScheduleRefused, match="max_total"):
        await store.schedules.add(new("c3"), max_per_chat=1, max_total=2)


async def test_a_cancelled_schedule_is_no_longer_active_or_due(store: BackendStore) -> None:
    added = await store.schedules.add(new(), max_per_chat=5, max_total=10)
    cancelled = await store.schedules.cancel(added.id)
    assert cancelled is not None
    assert cancelled.state is ScheduleState.CANCELLED
    assert await store.schedules.cancel(added.id) is None
    assert await store.schedules.due(DUE) == []
    assert await store.schedules.listed() == []
    assert [s.id for s in await store.schedules.listed(active_only=False)] == [added.id]


async def test_a_firing_is_claimed_once(store: BackendStore) -> None:
    added = await store.schedules.add(new(cron="*/5 * * * *"), max_per_chat=5, max_total=10)
    assert await store.schedules.due(DUE - timedelta(seconds=1)) == []
    (due,) = await store.schedules.due(DUE)
    later = DUE + timedelta(minutes=5)
    assert await store.schedules.claim(due, next_fire_at=later, firing=claim(added.id)) is True
    assert await store.schedules.claim(due, next_fire_at=later, firing=claim(added.id)) is False
    moved = await store.schedules.get(added.id)
    assert moved is not None
    assert (moved.next_fire_at, moved.state) == (later, ScheduleState.ACTIVE)
    ((unsettled, fired),) = await store.schedules.unsettled()
    assert (unsettled.id, fired.due_at, fired.outcome) == (added.id, DUE, FiringOutcome.CLAIMED)
    await store.schedules.settle(
        fired, FiringOutcome.LATE, delivery_id="push-1", detail="12 s late"
    )
    assert await store.schedules.unsettled() == []
    (recorded,) = await store.schedules.firings(added.id)
    assert (recorded.outcome, recorded.delivery_id) == (FiringOutcome.LATE, "push-1")
    settled = await store.schedules.get(added.id)
    assert settled is not None
    assert settled.last_outcome is FiringOutcome.LATE


async def test_a_one_shot_is_done_once_claimed(store: BackendStore) -> None:
    added = await store.schedules.add(new(), max_per_chat=5, max_total=10)
    assert await store.schedules.claim(added, next_fire_at=None, firing=claim(added.id))
    done = await store.schedules.get(added.id)
    assert done is not None
    assert (done.state, done.next_fire_at) == (ScheduleState.DONE, None)
    assert (await store.schedules.counts()).active == 0


async def test_two_stores_racing_for_a_firing_get_it_once(
    store: BackendStore, make_store: StoreFactory
) -> None:
    added = await store.schedules.add(new(cron="*/5 * * * *"), max_per_chat=5, max_total=10)
    later = DUE + timedelta(minutes=5)
    async with make_store() as other:
        results = await asyncio.gather(
            *(
                s.schedules.claim(added, next_fire_at=later, firing=claim(added.id, name))
                for s, name in ((store, "a"), (other, "b"), (store, "a2"), (other, "b2"))
            )
        )
    assert sorted(results) == [False, False, False, True]
    assert len(await store.schedules.firings(added.id)) == 1
