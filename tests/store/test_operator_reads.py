"""What the operator CLI relies on: opening the daemon's store beside it without creating or
migrating anything, and journal entries that carry their dedupe decisions."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiosqlite
import pytest

from bot.errors import StoreError
from store.schema import latest_version
from store.sqlite import SqliteStore
from tests.store.support import START, ManualClock, inbound, journal_entry, record


async def _set_user_version(path: Path, version: int) -> None:
    async with aiosqlite.connect(path) as raw:
        await raw.execute(f"PRAGMA user_version = {version}")
        await raw.commit()


async def test_open_existing_never_creates_a_database(db_path: Path) -> None:
    store = SqliteStore(db_path)
    with pytest.raises(StoreError, match="no database at"):
        await store.open_existing()
    assert not await asyncio.to_thread(db_path.parent.exists)


async def test_open_existing_reads_beside_the_open_daemon_store(
    store: SqliteStore, db_path: Path
) -> None:
    await store.settings.set("paused.fake", "1")  # ``store`` stays open, as a daemon's does
    reader = SqliteStore(db_path)
    await reader.open_existing()
    try:
        assert await reader.settings.get("paused.fake") == "1"
        await reader.settings.set("paused.fake", None)
    finally:
        await reader.aclose()
    assert await store.settings.get("paused.fake") is None


@pytest.mark.parametrize("offset", [-1, 1], ids=["older", "newer"])
async def test_open_existing_refuses_another_schema_and_leaves_it(
    db_path: Path, offset: int
) -> None:
    async with SqliteStore(db_path):
        pass
    version = latest_version() + offset
    await _set_user_version(db_path, version)
    store = SqliteStore(db_path)
    word = "older" if offset < 0 else "newer"
    with pytest.raises(StoreError, match=f"schema version {version} is {word}"):
        await store.open_existing()
    assert not await store.writable()
    async with aiosqlite.connect(db_path) as raw, raw.execute("PRAGMA user_version") as cursor:
        row = await cursor.fetchone()
    assert row is not None
    assert row[0] == version  # not migrated


async def test_entries_carry_their_duplicates(store: SqliteStore, clock: ManualClock) -> None:
    entry_id = await record(store, inbound("m1"), "c")
    assert entry_id is not None
    entry = await journal_entry(store, "m1")
    assert entry is not None
    assert (entry.duplicates, entry.last_duplicate_at) == (0, None)
    await store.inbound.count_duplicate(inbound("m1"))
    later = clock.advance(3)
    await store.inbound.count_duplicate(inbound("m1"))
    (found,) = await store.inbound.find("telegram", "m1")
    assert (found.duplicates, found.last_duplicate_at) == (2, later)
    assert found.recorded_at == START


async def test_find_without_a_channel_looks_in_every_channel(store: SqliteStore) -> None:
    await record(store, inbound("m1"), "c1")
    await record(store, inbound("m1", channel="slack"), "c2")
    await record(store, inbound("m1", chat_id="c2"), "c3")
    await record(store, inbound("m2"), "c4")
    found = await store.inbound.find(None, "m1")
    assert [entry.correlation_id for entry in found] == ["c1", "c2", "c3"]
    assert [entry.correlation_id for entry in await store.inbound.find("slack", "m1")] == ["c2"]
