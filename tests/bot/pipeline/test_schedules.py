"""Schedules fire once: across a restart, with a claim left by a killed daemon, with two
replicas on PostgreSQL; missed firings follow their misfire policy (design §19 "Schedules")."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

from bot.messages import ChatType, utc_now
from bot.ports import Store
from bot.ports.schedules import (
    Firing,
    FiringOutcome,
    NewSchedule,
    Schedule,
    ScheduleAction,
    ScheduleState,
    ScheduleTarget,
    schedules_of,
)
from bot.schedules.book import ScheduleBook
from store.sqlite import SqliteStore
from tests.bot.harness import make_settings, running
from tests.bot.pipeline.replica_support import replica
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import FakeChannel
from tests.fakes.common.waiting import eventually

ALICE = ScheduleTarget(channel="fake", account_id="", chat_id="dm-alice", chat_type=ChatType.DM)


async def _add_due(store: Store, text: str, *, ago_s: float, grace_s: int = 300) -> Schedule:
    """A one-shot whose time came ``ago_s`` seconds ago (while no daemon ran)."""
    table = schedules_of(store)
    assert table is not None
    due = utc_now() - timedelta(seconds=ago_s)
    new = NewSchedule(
        target=ALICE, action=ScheduleAction.MESSAGE, text=text, at=due, timezone="UTC",
        misfire_grace_s=grace_s, next_fire_at=due, created_by="test",
    )  # fmt: skip
    return await table.add(new, max_per_chat=20, max_total=100)


async def _firings(store: Store, schedule_id: int) -> list[Firing]:
    table = schedules_of(store)
    assert table is not None
    return list(await table.firings(schedule_id))


def _count(channel: FakeChannel, text: str) -> int:
    return sum(1 for t in channel.texts() if t == text)


async def test_a_schedule_due_in_two_seconds_fires_once_across_a_restart(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    channel = FakeChannel()
    async with running(settings, [channel], FakeAgent()) as run:
        book = ScheduleBook(lambda: settings, run.kernel.store)
        at = (utc_now() + timedelta(seconds=2)).isoformat()
        made = await book.create(
            ALICE, at=at, cron=None, timezone="UTC", action=ScheduleAction.MESSAGE,
            text="stand-up in 5", actor="cli:test",
        )  # fmt: skip
    # stopped before its time; the next start delivers it (once, whenever it starts)
    channel = FakeChannel()
    async with running(settings, [channel], FakeAgent()) as run:
        await channel.wait_text("stand-up in 5", within=10)
        await _add_due(run.kernel.store, "marker", ago_s=0)
        await channel.wait_text("marker", within=10)  # fired after the first, in the same loop
        (fired,) = await _firings(run.kernel.store, made.id)
    assert _count(channel, "stand-up in 5") == 1
    assert fired.outcome in {FiringOutcome.DELIVERED, FiringOutcome.LATE}
    assert fired.delivery_id is not None
    channel = FakeChannel()
    async with running(settings, [channel], FakeAgent()) as run:
        await _add_due(run.kernel.store, "second marker", ago_s=0)
        await channel.wait_text("second marker", within=10)
    assert _count(channel, "stand-up in 5") == 0


async def test_a_firing_claimed_by_a_killed_daemon_is_delivered_once_at_the_next_start(
    tmp_path: Path,
) -> None:
    settings = make_settings(tmp_path)
    store = SqliteStore(settings.store.sqlite_path(settings.state_dir))
    await store.open()
    try:
        made = await _add_due(store, "claimed then killed", ago_s=1)
        assert made.next_fire_at is not None
        claim = Firing(
            schedule_id=made.id, due_at=made.next_fire_at, outcome=FiringOutcome.CLAIMED,
            replica="killed", delivery_id=None, at=utc_now(),
        )  # fmt: skip
        assert await store.schedules.claim(made, next_fire_at=None, firing=claim)
    finally:
        await store.aclose()
    channel = FakeChannel()
    async with running(settings, [channel], FakeAgent()) as run:
        await channel.wait_text("claimed then killed", within=10)
        await eventually(
            lambda: _settled(run.kernel.store, made.id), within=10
        )  # the push recorded, the firing settled
    assert _count(channel, "claimed then killed") == 1


async def _settled(store: Store, schedule_id: int) -> bool:
    firings = await _firings(store, schedule_id)
    return bool(firings) and firings[0].outcome is not FiringOutcome.CLAIMED


async def test_a_missed_firing_within_its_grace_is_late_and_beyond_it_skipped(
    tmp_path: Path,
) -> None:
    settings = make_settings(tmp_path)
    channel = FakeChannel()
    store = SqliteStore(settings.store.sqlite_path(settings.state_dir))
    await store.open()
    try:
        late = await _add_due(store, "a bit late", ago_s=60, grace_s=300)
        missed = await _add_due(store, "far too late", ago_s=3600, grace_s=300)
    finally:
        await store.aclose()
    async with running(settings, [channel], FakeAgent()) as run:
        await channel.wait_text("a bit late", within=10)
        await eventually(lambda: _settled(run.kernel.store, late.id), within=10)
        await eventually(lambda: _settled(run.kernel.store, missed.id), within=10)
        (was_late,) = await _firings(run.kernel.store, late.id)
        (skipped,) = await _firings(run.kernel.store, missed.id)
        table = schedules_of(run.kernel.store)
        assert table is not None
        done = await table.get(missed.id)
    assert was_late.outcome is FiringOutcome.LATE
    assert skipped.outcome is FiringOutcome.SKIPPED
    assert skipped.detail is not None
    missed_by = re.search(r"missed by (\d+) s", skipped.detail)
    assert missed_by is not None, skipped.detail
    assert 3600 <= int(missed_by.group(1)) < 3660  # a busy machine starts the daemon late
    assert done is not None
    assert done.state is ScheduleState.DONE
    assert done.last_outcome is FiringOutcome.SKIPPED
    assert _count(channel, "a bit late") == 1
    assert _count(channel, "far too late") == 0


async def test_a_per_second_cron_fires_on_its_times(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    channel = FakeChannel()
    async with running(settings, [channel], FakeAgent()) as run:
        book = ScheduleBook(lambda: settings, run.kernel.store)
        made = await book.create(
            ALICE, at=None, cron="* * * * * *", timezone="Europe/Berlin",
            action=ScheduleAction.MESSAGE, text="tick", actor="cli:test",
        )  # fmt: skip
        await channel.wait_text("tick", within=10)
        await eventually(lambda: _settled(run.kernel.store, made.id), within=10)
        await book.cancel(made.id, "cli:test")
        (fired, *_) = await _firings(run.kernel.store, made.id)
    assert made.next_fire_at is not None
    assert fired.due_at >= made.next_fire_at
    assert fired.due_at.microsecond == 0  # a time of the expression, not "now"
    assert fired.outcome is FiringOutcome.DELIVERED


async def test_two_replicas_deliver_a_firing_once(tmp_path: Path, schema: tuple[str, str]) -> None:
    async with replica(tmp_path, "a", schema) as a, replica(tmp_path, "b", schema) as b:
        made = await _add_due(a.run.kernel.store, "one of two", ago_s=0)

        async def delivered() -> bool:
            return (_count(a.channel, "one of two") + _count(b.channel, "one of two")) == 1

        await eventually(delivered, within=10)
        await eventually(lambda: _settled(a.run.kernel.store, made.id), within=10)
        marker = await _add_due(b.run.kernel.store, "after", ago_s=0)
        await eventually(lambda: _settled(b.run.kernel.store, marker.id), within=10)
        await eventually(
            lambda: _count(a.channel, "after") + _count(b.channel, "after") == 1, within=10
        )
        firings = await _firings(a.run.kernel.store, made.id)
    assert len(firings) == 1
    assert _count(a.channel, "one of two") + _count(b.channel, "one of two") == 1
