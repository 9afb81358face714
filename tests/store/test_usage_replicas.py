"""Two replicas folding usage at the same moment on PostgreSQL count each row once: while one
is held at its DELETE by a third connection's row locks, the other finds it folding and
leaves the rows to it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import psycopg
import pytest
from psycopg import sql

from bot.ports.usage import UsageFilter
from store.postgres import PostgresStore
from tests.fakes.common.waiting import eventually
from tests.postgres import fresh_schema, require_postgres
from tests.store.support import START
from tests.store.test_usage_fold import CUTOFF, turns


@pytest.fixture
async def pg() -> AsyncIterator[tuple[str, str]]:
    url = require_postgres()
    async with fresh_schema(url, "t_usage_fold") as schema:
        yield url, schema


async def _someone_waits_for(admin: psycopg.AsyncConnection[tuple[object, ...]], pid: int) -> bool:
    cursor = await admin.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE %s = ANY (pg_blocking_pids(pid))", (pid,)
    )
    found = await cursor.fetchone()
    return found is not None and int(str(found[0])) > 0


async def test_two_replicas_folding_at_once_count_every_row_once(pg: tuple[str, str]) -> None:
    url, schema = pg
    async with PostgresStore(url, schema=schema) as a, PostgresStore(url, schema=schema) as b:
        for turn in turns(seed=5, count=120):
            await a.usage.record(turn)
        (before,) = await a.usage.totals(UsageFilter())
        async with (
            await psycopg.AsyncConnection.connect(url, autocommit=True) as holder,
            await psycopg.AsyncConnection.connect(url, autocommit=True) as admin,
        ):
            await holder.execute("BEGIN")
            await holder.execute(
                sql.SQL("SELECT id FROM {} WHERE at < %s FOR UPDATE").format(
                    sql.Identifier(schema, "usage")
                ),
                (CUTOFF,),
            )
            first = asyncio.create_task(a.usage.fold(CUTOFF), name="fold-a")
            pid = holder.info.backend_pid
            await eventually(lambda: _someone_waits_for(admin, pid), within=4)  # < lock_timeout
            assert await b.usage.fold(CUTOFF) == 0  # at once: the first one is folding
            await holder.execute("COMMIT")
            folded = await first
        assert folded > 0
        assert await a.usage.totals(UsageFilter()) == [before]
        assert await b.usage.fold(CUTOFF) == 0  # nothing left to fold
        assert await b.usage.totals(UsageFilter(until=START)) == [before]
