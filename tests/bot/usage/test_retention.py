"""Keeping usage: the housekeeping job folds whole UTC days older than ``usage.detail_days``
(each day once, however often it runs), purges what is older than ``usage.retention_days``,
and leaves every total of the days it keeps as it was."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import cast

import pytest

from bot.config.settings import Settings
from bot.ports import Store
from bot.ports.usage import UsageFilter, UsageRecord
from bot.usage.retention import keep_usage
from store.sqlite import SqliteStore

NOW = datetime(2026, 12, 6, 15, 0, tzinfo=UTC)
DAY = timedelta(days=1)


def settings(tmp_path: Path) -> Settings:
    return Settings.model_validate(
        {
            "config_version": 1,
            "state_dir": str(tmp_path / "state"),
            "usage": {"detail_days": 30, "retention_days": 100},
        }
    )


def turn(at: datetime, n: int) -> list[UsageRecord]:
    return [
        UsageRecord(
            at=at, channel="slack", account_id="T1", chat_id="C1", user_id="U1",
            thread_id=f"th-{n}", model="gpt-4o", correlation_id=f"corr-{n}", calls=2,
            unreported_calls=0, input_tokens=10 * n, output_tokens=n, cached_tokens=0,
            cost=0.5,
        )
    ]  # fmt: skip


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    async with SqliteStore(tmp_path / "state" / "switchboard.db") as opened:
        yield opened


async def test_old_days_are_folded_once_and_older_ones_purged(
    tmp_path: Path, store: SqliteStore
) -> None:
    ages = [
        101 * DAY,  # past retention: purged
        31 * DAY,  # two turns of one day past detail_days: folded into one row
        31 * DAY - timedelta(hours=1),
        30 * DAY + timedelta(hours=1),  # its day straddles the cutoff: kept whole, for now
        2 * DAY,
    ]
    for n, age in enumerate(ages, start=1):
        await store.usage.record(turn(NOW - age, n))
    config = settings(tmp_path)
    kept = UsageFilter(since=NOW - 40 * DAY)
    (before,) = await store.usage.totals(kept)

    assert await keep_usage(store, config, NOW) == (2, 1)
    assert await keep_usage(store, config, NOW + timedelta(hours=1)) == (0, 0)  # same day

    assert await store.usage.totals(kept) == [before]
    (everything,) = await store.usage.totals(UsageFilter())
    assert everything.turns == 4
    daily = await store.usage.over_time(UsageFilter(), "day")
    assert [(at.date(), t.turns) for at, t in daily] == [
        ((NOW - 31 * DAY).date(), 2),
        ((NOW - 30 * DAY).date(), 1),
        ((NOW - 2 * DAY).date(), 1),
    ]
    assert await keep_usage(store, config, NOW + DAY) == (1, 0)  # the next day: the next fold


async def test_a_store_without_usage_has_nothing_to_keep(tmp_path: Path) -> None:
    assert await keep_usage(cast(Store, object()), settings(tmp_path), NOW) == (0, 0)
