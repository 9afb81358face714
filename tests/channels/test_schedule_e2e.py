"""Schedules on every platform, through the real adapters against their fakes, with two
replicas on one PostgreSQL schema (design §19 "Schedules"): a reminder the agent was asked
for in a topic arrives in that topic once, across a restart of both replicas; a firing missed
while they were down follows its misfire policy; a per-second cron in a time zone fires on its
times; every firing goes out by the platform's own proactive call, once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from agent.embedded import EmbeddedBackend
from bot.config.settings import Settings
from bot.messages import utc_now
from bot.ports import Store
from bot.ports.schedules import (
    FiringOutcome,
    NewSchedule,
    Schedule,
    ScheduleAction,
    ScheduleStore,
    schedules_of,
)
from bot.schedules.book import ScheduleBook
from store.postgres import PostgresStore
from tests.channels.schedule_places import PLACES, Place
from tests.fakes.common.waiting import eventually
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall

WITHIN_S = 20.0
"""Bounds for waits on a busy machine (never waited out when things work)."""
REMIND_IN_S = 4
"""The reminder's time from the request: after the first run stops, on a quick machine."""


def _settings(
    place: Place, state_dir: Path, fake: Any, model: FakeOpenAIServer, schema: tuple[str, str]
) -> Settings:
    url, name = schema
    agent = {"model": {"base_url": model.base_url, "api_key": "sk-test", "name": "fake-model"}}
    return place.settings(
        state_dir, fake, agent=agent, store={"url": url, "schema": name},
        access={"dm_policy": "open", "group_policy": "all"},
        daemon={"replica_expiry_s": 3},
    )  # fmt: skip


@asynccontextmanager
async def _replicas(
    place: Place, tmp_path: Path, fake: Any, model: FakeOpenAIServer, schema: tuple[str, str]
) -> AsyncIterator[list[Any]]:
    """Replicas a and b on the schema, each with its own state dir and embedded agent."""
    async with AsyncExitStack() as stack:
        runs = []
        for name in ("a", "b"):
            settings = _settings(place, tmp_path / name, fake, model, schema)
            agent = EmbeddedBackend(settings, max_retries=0)
            runs.append(await stack.enter_async_context(place.daemon(settings, fake, agent)))
        yield runs


def _table(store: Store) -> ScheduleStore:
    table = schedules_of(store)
    assert table is not None
    return table


async def _missed(table: ScheduleStore, like: Schedule, text: str, *, ago_s: float) -> Schedule:
    """A one-shot in ``like``'s conversation whose time came ``ago_s`` seconds ago."""
    due = utc_now() - timedelta(seconds=ago_s)
    new = NewSchedule(
        target=like.target, action=ScheduleAction.MESSAGE, text=text, at=due, timezone="UTC",
        misfire_grace_s=300, next_fire_at=due, created_by="test",
    )  # fmt: skip
    return await table.add(new, max_per_chat=20, max_total=100)


async def _settled(table: ScheduleStore, schedule_id: int, count: int = 1) -> bool:
    firings = await table.firings(schedule_id)
    return sum(f.outcome is not FiringOutcome.CLAIMED for f in firings) >= count


def _remind(at_s: int) -> ToolCall:
    at = (utc_now() + timedelta(seconds=at_s)).astimezone(ZoneInfo("Europe/Berlin"))
    return ToolCall(
        name="schedule_message",
        arguments={
            "at": at.replace(tzinfo=None).isoformat(timespec="seconds"),
            "timezone": "Europe/Berlin", "kind": "message", "text": "⏰ Stand-up now",
        },
        id="call_remind",
    )  # fmt: skip


@pytest.mark.parametrize("place", PLACES, ids=[p.name for p in PLACES])
async def test_schedules_fire_once_in_their_topic_across_a_restart_of_two_replicas(
    tmp_path: Path, place: Place, schema: tuple[str, str]
) -> None:
    with FakeOpenAIServer() as model, place.fake() as fake:
        async with _replicas(place, tmp_path, fake, model, schema) as runs:
            model.script(Reply(tool_calls=(_remind(REMIND_IN_S),)), Reply(text="I'll remind you."))
            topic = await place.ask(fake, runs[0], "remind me in a few seconds")
            await eventually(
                lambda: place.shown(fake, topic, "I'll remind you.") == 1, within=WITHIN_S
            )
            (reminder,) = await _table(runs[0].kernel.store).listed()
        # Both replicas stopped (most likely before the reminder's time); meanwhile two
        # one-shots came due: one within its grace, one far beyond it.
        url, name = schema
        store = PostgresStore.from_url(url, schema=name)
        await store.open()
        try:
            late = await _missed(_table(store), reminder, "a bit late", ago_s=60)
            skipped = await _missed(_table(store), reminder, "far too late", ago_s=3600)
        finally:
            await store.aclose()
        async with _replicas(place, tmp_path, fake, model, schema) as runs:
            table = _table(runs[1].kernel.store)
            settings = _settings(place, tmp_path / "b", fake, model, schema)
            book = ScheduleBook(lambda: settings, runs[1].kernel.store)
            tick = await book.create(
                reminder.target, at=None, cron="* * * * * *", timezone="America/New_York",
                action=ScheduleAction.MESSAGE, text="tick", actor="cli:test",
            )  # fmt: skip
            await eventually(
                lambda: place.shown(fake, topic, "⏰ Stand-up now") >= 1, within=WITHIN_S
            )
            await eventually(lambda: place.shown(fake, topic, "a bit late") >= 1, within=WITHIN_S)
            await eventually(lambda: _settled(table, skipped.id), within=WITHIN_S)
            await eventually(lambda: _settled(table, tick.id, 2), within=WITHIN_S)
            await book.cancel(tick.id, "cli:test")
            ticks = list(await table.firings(tick.id))
            marker = await _missed(table, reminder, "marker", ago_s=0)
            await eventually(lambda: place.shown(fake, topic, "marker") >= 1, within=WITHIN_S)
            fired = {
                s: list(await table.firings(s))
                for s in (reminder.id, late.id, skipped.id, marker.id)
            }
        counts = {
            text: place.shown(fake, topic, text)
            for text in ("⏰ Stand-up now", "a bit late", "far too late", "marker")
        }
    assert counts == {"⏰ Stand-up now": 1, "a bit late": 1, "far too late": 0, "marker": 1}
    assert [f.outcome for f in fired[reminder.id]] in (
        [FiringOutcome.DELIVERED],
        [FiringOutcome.LATE],
    )
    assert [f.outcome for f in fired[late.id]] == [FiringOutcome.LATE]
    assert [f.outcome for f in fired[skipped.id]] == [FiringOutcome.SKIPPED]
    assert all(f.due_at.microsecond == 0 for f in ticks)
    assert len({f.due_at for f in ticks}) == len(ticks)
    assert reminder.target.topic_id is not None or place.name == "dingtalk"
    if place.name == "dingtalk":  # the group send, never a session webhook that may be gone
        assert {m.via for m in fake.sent_messages() if "Stand-up" in m.text} == {"group"}
