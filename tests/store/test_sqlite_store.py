"""SqliteStore lifecycle: migrations, opening and closing, two stores on one file."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import aiosqlite
import pytest

from bot.errors import StoreBusy, StoreError
from bot.records import InboundStatus, OutboxState, PairingRequest
from store.schema import latest_version, load_migrations, split_statements
from store.sqlite import SqliteStore
from tests.store.support import ManualClock, enqueue, inbound, item, journal_entry, key, record

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
}


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


async def test_migrations_apply_once_and_reopening_keeps_data(
    db_path: Path, clock: ManualClock
) -> None:
    async with SqliteStore(db_path, clock=clock) as store:
        await store.settings.set("paused", "yes")
    # Reopening must not re-run 0001 (it would fail on CREATE TABLE) nor touch the data.
    for _ in range(2):
        async with SqliteStore(db_path, clock=clock) as store:
            assert await store.settings.get("paused") == "yes"
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


async def test_writable_is_true_when_open_and_false_when_closed(
    db_path: Path, clock: ManualClock
) -> None:
    store = SqliteStore(db_path, clock=clock)
    assert not await store.writable()
    await store.open()
    await store.open()  # idempotent
    assert await store.writable()
    assert await store.writable()
    await store.aclose()
    await store.aclose()  # idempotent
    assert not await store.writable()


async def test_use_after_close_is_a_store_error(db_path: Path, clock: ManualClock) -> None:
    async with SqliteStore(db_path, clock=clock) as store:
        pass
    with pytest.raises(StoreError, match="not open"):
        await store.settings.get("x")


async def test_a_failed_transaction_rolls_back_and_the_store_keeps_working(
    store: SqliteStore, clock: ManualClock
) -> None:
    """An IntegrityError inside a transaction becomes StoreError and leaves no open tx."""
    request = PairingRequest(
        channel="telegram",
        user_id="u1",
        display_name="Ada",
        chat_id="c1",
        code="ABC123",
        created_at=clock.now,
        expires_at=clock.advance(3600),
    )
    await store.access.add_pairing(request)
    with pytest.raises(StoreError, match="UNIQUE"):
        await store.access.add_pairing(request)
    await store.settings.set("after", "ok")
    assert await store.settings.get("after") == "ok"
    assert await store.writable()


# --------------------------------------------------------------------------- two stores


async def test_a_second_store_reads_and_writes_while_the_first_writes(
    db_path: Path, clock: ManualClock
) -> None:
    async with (
        SqliteStore(db_path, clock=clock) as daemon,
        SqliteStore(db_path, clock=clock) as cli,
    ):

        async def daemon_work() -> None:
            for n in range(30):
                await enqueue(daemon, [item(f"d{n}")])
                await record(daemon, inbound(f"m{n}"), f"corr-{n}")

        async def cli_work() -> list[int]:
            seen: list[int] = []
            for n in range(30):
                seen.append((await cli.outbox.counts())[OutboxState.PENDING])
                await cli.audit.record("cli", "probe", str(n))
            return seen

        _, seen = await asyncio.gather(daemon_work(), cli_work())
        assert seen == sorted(seen)  # the reader only ever sees committed, growing state
        assert (await cli.outbox.counts())[OutboxState.PENDING] == 30
        assert len(await cli.inbound.unfinished()) == 30
        assert len(await daemon.audit.recent(limit=100)) == 30


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


async def test_two_stores_binding_one_new_key_agree_on_one_thread(
    db_path: Path, clock: ManualClock
) -> None:
    async with (
        SqliteStore(db_path, clock=clock) as first,
        SqliteStore(db_path, clock=clock) as second,
    ):
        results = await asyncio.gather(
            *(
                (first if n % 2 else second).conversations.bind(key(), f"thread-{n}")
                for n in range(20)
            )
        )
        assert len({c.thread_id for c in results}) == 1
        assert await first.conversations.count() == 1


@pytest.mark.parametrize("yields", [0, 1, 10, 50, 100, 200, 400, 800, 1200, 1600, 3200])
async def test_cancelling_a_write_leaves_all_or_nothing_and_a_usable_store(
    store: SqliteStore, yields: int
) -> None:
    """A transaction cancelled at any point is rolled back, and the next one still works."""
    batch = [item(f"k{n}") for n in range(20)]
    task = asyncio.create_task(enqueue(store, batch))
    for _ in range(yields):
        await asyncio.sleep(0)  # pick a cancellation point; nothing is waited for
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    pending = (await store.outbox.counts())[OutboxState.PENDING]
    assert pending in (0, 20)
    assert len(await enqueue(store, [*batch, item("after")])) == 21
    assert (await store.outbox.counts())[OutboxState.PENDING] == 21


# --------------------------------------------------------------------------- pipelining


async def test_a_statement_issued_during_a_failing_transaction_is_not_rolled_back_with_it(
    store: SqliteStore, clock: ManualClock
) -> None:
    """Single statements are queued without waiting for each other, but never inside a
    transaction another coroutine has open."""
    request = PairingRequest(
        channel="telegram", user_id="u1", display_name="Ada", chat_id="c1", code="DUP123",
        created_at=clock.now, expires_at=clock.advance(3600),
    )  # fmt: skip
    await store.access.add_pairing(request)
    failing, during = await asyncio.gather(
        store.access.add_pairing(request),  # opens its transaction first, then fails
        store.settings.set("during", "kept"),
        return_exceptions=True,
    )
    assert isinstance(failing, StoreError)
    assert during is None
    assert await store.settings.get("during") == "kept"


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


async def test_marks_made_together_are_written_together_and_each_caller_waits_for_its_own(
    store: SqliteStore,
) -> None:
    ids = [await record(store, inbound(f"m{n}"), f"corr-{n}") for n in range(5)]
    entries = {f"m{n}": entry_id for n, entry_id in enumerate(ids) if entry_id is not None}

    async def mark(message_id: str, entry_id: int) -> InboundStatus:
        await store.inbound.update(entry_id, InboundStatus.HANDLED, reason=f"r{entry_id}")
        found = await journal_entry(store, message_id)  # written by the time update returns
        assert found is not None
        return found.status

    assert (
        await asyncio.gather(
            *(mark(message_id, entry_id) for message_id, entry_id in entries.items())
        )
        == [InboundStatus.HANDLED] * 5
    )


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
