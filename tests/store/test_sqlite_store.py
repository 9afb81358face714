"""SqliteStore's own machinery: migrations, the file, WAL and the busy timeout, and how one
connection pipelines and batches statements. (What every backend does is in the contract
modules beside this one.)"""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiosqlite
import pytest

from bot.errors import StoreBusy, StoreError
from bot.records import InboundStatus
from store.schema import latest_version, load_migrations, split_statements
from store.sqlite import SqliteStore
from tests.store.support import ManualClock, enqueue, inbound, item, journal_entry, record

TABLES = {
    "inbound",
    "conversations",
    "message_links",
    "outbox",
    "clarifications",
    "users",
    "pairing_requests",
    "audit",
    "settings",
    "write_probe",
    "replicas",
}


@pytest.fixture
def backend() -> str:
    """Every test here is about SQLite alone."""
    return "sqlite"


async def _user_version(path: Path) -> int:
    async with aiosqlite.connect(path) as raw, raw.execute("PRAGMA user_version") as cursor:
        row = await cursor.fetchone()
    assert row is not None
    return int(row[0])


async def _tables(path: Path) -> set[str]:
    async with aiosqlite.connect(path) as raw:
        rows = await raw.execute_fetchall("SELECT name FROM sqlite_master WHERE type = 'table'")
    return {str(row[0]) for row in rows}


# --------------------------------------------------------------------------- migrations


def test_migrations_are_numbered_from_one_without_gaps() -> None:
    migrations = load_migrations()
    assert [m.version for m in migrations] == list(range(1, len(migrations) + 1))
    assert latest_version() == migrations[-1].version


def test_split_statements_keeps_trigger_bodies_whole() -> None:
    script = (
        "-- a comment\n"
        "CREATE TABLE a (x INTEGER);\n"
        "CREATE TRIGGER t AFTER INSERT ON a BEGIN\n"
        "  UPDATE a SET x = 1;\n"
        "END;\n"
        "-- trailing comment\n"
    )
    statements = split_statements(script)
    assert len(statements) == 2
    assert statements[1].startswith("CREATE TRIGGER")
    assert statements[1].endswith("END;")


def test_split_statements_rejects_an_unterminated_statement() -> None:
    with pytest.raises(StoreError, match="incomplete"):
        split_statements("CREATE TABLE a (x INTEGER);\nCREATE TABLE b (y")


async def test_open_creates_parent_dirs_wal_and_every_table(
    db_path: Path, clock: ManualClock
) -> None:
    assert not db_path.parent.exists()
    async with SqliteStore(db_path, clock=clock):
        assert await asyncio.to_thread(db_path.exists)
        async with aiosqlite.connect(db_path) as raw:
            rows = list(await raw.execute_fetchall("PRAGMA journal_mode"))
        assert str(rows[0][0]).lower() == "wal"
    assert await _tables(db_path) >= TABLES
    assert await _user_version(db_path) == latest_version()


async def test_a_newer_schema_is_refused(db_path: Path, clock: ManualClock) -> None:
    async with SqliteStore(db_path, clock=clock):
        pass
    newer = latest_version() + 1
    async with aiosqlite.connect(db_path) as raw:
        await raw.execute(f"PRAGMA user_version = {newer}")
        await raw.commit()
    store = SqliteStore(db_path, clock=clock)
    expected = f"database schema version {newer} is newer than this Switchboard"
    with pytest.raises(StoreError, match=expected) as caught:
        await store.open()
    assert str(db_path) in str(caught.value)
    assert not await store.writable()  # the failed open left nothing open
    assert await _user_version(db_path) == newer  # and did not "fix" the file


async def test_a_path_that_cannot_be_a_database_is_a_store_error(tmp_path: Path) -> None:
    directory = tmp_path / "a-directory"
    directory.mkdir()
    with pytest.raises(StoreError, match="a-directory"):
        async with SqliteStore(directory):
            pass


async def test_a_file_that_is_not_sqlite_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "switchboard.db"
    path.write_bytes(b"this is not a database, just some bytes" * 100)
    with pytest.raises(StoreError, match=r"switchboard\.db"):
        async with SqliteStore(path):
            pass


# --------------------------------------------------------------------------- lifecycle


async def test_from_state_dir_uses_switchboard_db(tmp_path: Path) -> None:
    store = SqliteStore.from_state_dir(tmp_path / "state")
    assert store.path == tmp_path / "state" / "switchboard.db"
    async with store:
        assert await store.writable()
    assert (tmp_path / "state" / "switchboard.db").exists()


# --------------------------------------------------------------------------- a second connection


async def test_a_reader_is_not_blocked_by_an_open_write_transaction(
    db_path: Path, clock: ManualClock
) -> None:
    async with SqliteStore(db_path, clock=clock) as store:
        await store.settings.set("paused", "no")
        async with aiosqlite.connect(db_path, isolation_level=None) as writer:
            await writer.execute("BEGIN IMMEDIATE")
            await writer.execute("UPDATE settings SET value = 'yes' WHERE name = 'paused'")
            # WAL: the store reads the last committed value while the write lock is held.
            assert await store.settings.get("paused") == "no"
            # A write from the store waits for the lock (busy_timeout) instead of failing.
            await asyncio.gather(store.audit.record("cli", "x", ""), writer.execute("COMMIT"))
        assert await store.settings.get("paused") == "yes"
        assert len(await store.audit.recent()) == 1


async def test_a_write_lock_held_past_the_busy_timeout_is_a_store_busy_error(
    db_path: Path, clock: ManualClock
) -> None:
    """The kernel's loops wait out ``StoreBusy`` (transient) but stop on other store errors."""
    async with SqliteStore(db_path, clock=clock, busy_timeout_s=0.05) as store:
        await store.settings.set("paused", "no")
        async with aiosqlite.connect(db_path, isolation_level=None) as writer:
            await writer.execute("BEGIN IMMEDIATE")
            with pytest.raises(StoreBusy, match="locked"):
                await store.audit.record("cli", "x", "")
            await writer.execute("COMMIT")
        await store.audit.record("cli", "x", "")  # free again


# --------------------------------------------------------------------------- pipelining


async def test_concurrent_statements_each_learn_their_own_outcome(store: SqliteStore) -> None:
    copies = [inbound(f"m{n % 10}") for n in range(30)]  # every message three times
    ids = await asyncio.gather(
        *(record(store, message, f"corr-{n}") for n, message in enumerate(copies))
    )
    recorded = [entry_id for entry_id in ids if entry_id is not None]
    assert len(recorded) == len(set(recorded)) == 10
    assert ids[:10] == recorded  # the first copy of each is the one recorded
    rows = await store.outbox.enqueue_rows([item("same")])
    again = await asyncio.gather(*(store.outbox.enqueue_rows([item("same")]) for _ in range(5)))
    assert {batch[0].id for batch in again} == {rows[0].id}


async def test_a_cancelled_caller_does_not_take_the_batch_with_it(store: SqliteStore) -> None:
    ids = [await record(store, inbound(f"m{n}"), f"corr-{n}") for n in range(3)]
    first, second, third = (entry_id for entry_id in ids if entry_id is not None)
    tasks = [
        asyncio.create_task(store.inbound.update(entry_id, InboundStatus.FAILED))
        for entry_id in (first, second, third)
    ]
    await asyncio.sleep(0)  # all three have joined one batch
    tasks[0].cancel()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert isinstance(results[0], asyncio.CancelledError)
    assert results[1:] == [None, None]
    for message_id in ("m0", "m1", "m2"):  # the cancelled caller's row was written too
        found = await journal_entry(store, message_id)
        assert found is not None
        assert found.status is InboundStatus.FAILED


# --------------------------------------------------------------------------- beside the daemon


async def _set_user_version(path: Path, version: int) -> None:
    async with aiosqlite.connect(path) as raw:
        await raw.execute(f"PRAGMA user_version = {version}")
        await raw.commit()


async def test_open_existing_never_creates_a_database(db_path: Path) -> None:
    store = SqliteStore(db_path)
    with pytest.raises(StoreError, match="no database at"):
        await store.open_existing()
    assert not await asyncio.to_thread(db_path.parent.exists)


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
    assert await _user_version(db_path) == version  # not migrated


async def test_a_schema_1_database_gains_later_tables_on_open(
    db_path: Path, clock: ManualClock
) -> None:
    first = load_migrations()[0]
    db_path.parent.mkdir(parents=True)
    async with aiosqlite.connect(db_path) as raw:
        for statement in first.statements:
            await raw.execute(statement)
        await raw.execute("PRAGMA user_version = 1")
        await raw.commit()
    async with SqliteStore(db_path, clock=clock) as store:
        (row_id,) = await enqueue(store, [item("k1")])
        await store.outbox.record_attempt(row_id, "transient", "502")
        assert [a.detail for a in await store.outbox.attempts(row_id)] == ["502"]
