"""Finding journal entries by the reference a user is shown: a turn's correlation id (the
``ref`` in an error reply, also a ``run_agent`` push's delivery id), through an index on both
backends."""

from __future__ import annotations

from pathlib import Path

import aiosqlite
import psycopg

from store.postgres import PostgresStore
from tests.postgres import require_postgres
from tests.store.support import BackendStore, inbound, record


async def test_entries_are_found_by_their_correlation_id(store: BackendStore) -> None:
    first = await record(store, inbound("m1"), "0a3fafffb832")
    await record(store, inbound("m2"), "other")
    second = await record(store, inbound("m1", channel="slack"), "0a3fafffb832")
    found = await store.inbound.find_correlation("0a3fafffb832")
    assert [entry.id for entry in found] == [first, second]
    assert {entry.correlation_id for entry in found} == {"0a3fafffb832"}
    assert await store.inbound.find_correlation("m1") == []  # a message id is no correlation


async def test_the_lookup_uses_an_index(store: BackendStore, backend: str, db_path: Path) -> None:
    query = "SELECT id FROM inbound WHERE correlation_id = 'x'"
    if backend == "sqlite":
        async with aiosqlite.connect(db_path) as raw:
            rows = await raw.execute_fetchall(f"EXPLAIN QUERY PLAN {query}")
        plan = " ".join(str(row[-1]) for row in rows)
        assert "INDEX inbound_correlation" in plan, plan
        return
    assert isinstance(store, PostgresStore)
    async with await psycopg.AsyncConnection.connect(require_postgres(), autocommit=True) as conn:
        cursor = await conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND tablename = 'inbound'",
            (store.schema,),
        )
        definitions = [str(row[0]) for row in await cursor.fetchall()]
    assert any("(correlation_id)" in definition for definition in definitions), definitions
