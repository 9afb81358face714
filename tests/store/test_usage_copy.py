"""``store copy`` moves usage too: per-turn and folded rows (their dates and flags spelled the
PostgreSQL way) and the message counts read back the same, and new rows get new ids."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from bot.ports.usage import UsageFilter
from store.copy import copy_sqlite_to_postgres
from store.postgres import PostgresStore
from store.sqlite import SqliteStore
from tests.postgres import fresh_schema, require_postgres
from tests.store.support import START, BackendStore, ManualClock
from tests.store.test_usage_fold import turns


@pytest.fixture
async def pg() -> AsyncIterator[tuple[str, str]]:
    url = require_postgres()
    async with fresh_schema(url, "t_usage_copy") as schema:
        yield url, schema


async def summed(store: BackendStore) -> dict[str, object]:
    return {
        "users": await store.usage.totals(UsageFilter(), by="user"),
        "models": await store.usage.totals(UsageFilter(), by="model"),
        "hourly": await store.usage.over_time(UsageFilter(), "hour", by="chat"),
    }


async def test_usage_rows_and_message_counts_move_into_postgres(
    tmp_path: Path, pg: tuple[str, str]
) -> None:
    url, schema = pg
    state = tmp_path / "state"
    clock = ManualClock()
    async with SqliteStore.from_state_dir(state, clock=clock) as sqlite:
        for turn in turns(seed=11, count=60):
            await sqlite.usage.record(turn)
        assert await sqlite.usage.fold(START - timedelta(days=20)) > 0
        await sqlite.usage.hit("telegram", "u1", START)
        await sqlite.usage.hit("telegram", "u1", START)
        before = await summed(sqlite)

    result = await copy_sqlite_to_postgres(
        state / "switchboard.db", url, schema=schema, actor="cli:tester", clock=clock
    )

    assert result.tables["usage_hits"] == 1
    async with PostgresStore(url, schema=schema, clock=clock) as postgres:
        assert await summed(postgres) == before
        assert await postgres.usage.hit("telegram", "u1", START) == 3
        await postgres.usage.record(turns(seed=12, count=1)[0])
        (whole,) = await postgres.usage.totals(UsageFilter())
        assert whole.turns == 61
