"""The SQLite store's connection thread (``store/writer.py``): statements issued together reach
SQLite in one wake-up and commit as one transaction, without one caller's failure costing
another its write, and nobody hears "written" before the commit."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.errors import StoreError
from store.db import Database


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = Database(tmp_path / "group.db", clock=lambda: datetime.now(UTC), busy_timeout_s=5.0)
    await database.connect()
    await database.execute("CREATE TABLE notes (name TEXT PRIMARY KEY, size INTEGER)")
    await database.execute("CREATE TABLE parent (id INTEGER PRIMARY KEY)")
    await database.execute(
        "CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES parent (id))"
    )
    try:
        yield database
    finally:
        await database.close()


def _committed(path: Path) -> list[str]:
    """What another connection (another process) sees: only committed rows."""
    with contextlib.closing(sqlite3.connect(path)) as other:
        return [name for (name,) in other.execute("SELECT name FROM notes ORDER BY name")]


def _insert(db: Database, name: str, size: int = 0) -> asyncio.Future[None]:
    return asyncio.ensure_future(
        db.execute("INSERT INTO notes (name, size) VALUES (?, ?)", (name, size))
    )


async def test_statements_issued_together_reach_sqlite_in_one_wakeup(db: Database) -> None:
    names = [f"n{index:02d}" for index in range(50)]
    before = db.wakeups
    await asyncio.gather(*(_insert(db, name) for name in names))
    assert db.wakeups - before == 1
    # Every caller was answered after the commit: another connection sees every row.
    assert await asyncio.to_thread(_committed, db.path) == names


async def test_a_failing_statement_in_a_group_is_undone_alone(db: Database) -> None:
    await _insert(db, "taken")
    before = db.wakeups
    results = await asyncio.gather(
        _insert(db, "a"), _insert(db, "taken"), _insert(db, "b"), return_exceptions=True
    )
    assert db.wakeups - before == 1  # one group
    assert results[0] is None
    assert isinstance(results[1], StoreError)
    assert "UNIQUE" in str(results[1])
    assert results[2] is None
    assert await asyncio.to_thread(_committed, db.path) == ["a", "b", "taken"]


async def test_an_error_that_ends_the_transaction_fails_what_ran_with_it(db: Database) -> None:
    await db.execute(
        "CREATE TRIGGER poison BEFORE INSERT ON notes WHEN NEW.name = 'poison' "
        "BEGIN SELECT RAISE(ROLLBACK, 'poisoned'); END"
    )
    results = await asyncio.gather(
        _insert(db, "a"), _insert(db, "poison"), _insert(db, "b"), return_exceptions=True
    )
    # "a" shared the transaction the trigger rolled back: its caller hears so, not "written".
    assert isinstance(results[0], StoreError)
    assert isinstance(results[1], StoreError)
    assert "poisoned" in str(results[1])
    assert results[2] is None  # after the failure, the rest of the job runs on its own
    assert await asyncio.to_thread(_committed, db.path) == ["b"]


async def test_a_pragma_is_never_run_inside_a_group(db: Database) -> None:
    """``PRAGMA foreign_keys`` is a no-op inside a transaction."""
    assert (await db.row("PRAGMA foreign_keys") or [None])[0] == 1
    await asyncio.gather(_insert(db, "a"), db.execute("PRAGMA foreign_keys=OFF"), _insert(db, "b"))
    assert (await db.row("PRAGMA foreign_keys") or [None])[0] == 0
    await db.execute("INSERT INTO child (id, parent) VALUES (1, 99)")  # no parent 99: allowed now


async def test_a_bad_parameter_fails_its_caller_and_the_writer_goes_on(db: Database) -> None:
    results = await asyncio.gather(_insert(db, "big", 2**70), _insert(db, "a"),
                                   return_exceptions=True)  # fmt: skip
    assert isinstance(results[0], OverflowError)
    assert results[1] is None
    await _insert(db, "b")
    assert await asyncio.to_thread(_committed, db.path) == ["a", "b"]


async def test_a_shared_statement_waits_out_an_open_transaction(db: Database) -> None:
    entered = asyncio.Event()
    release = asyncio.Event()

    async def failing_transaction() -> None:
        async with db.transaction() as tx:
            await tx.execute("INSERT INTO notes (name) VALUES ('in-tx')")
            entered.set()
            await release.wait()
            raise RuntimeError("the transaction's caller changed its mind")

    transaction = asyncio.ensure_future(failing_transaction())
    await entered.wait()
    outside = _insert(db, "outside")  # issued while the transaction is open
    await asyncio.sleep(0)
    assert not outside.done()
    release.set()
    with pytest.raises(RuntimeError):
        await transaction
    await outside
    # Rolled back with the transaction: its own row only, never the one issued beside it.
    assert await asyncio.to_thread(_committed, db.path) == ["outside"]


async def test_close_runs_what_was_issued_and_refuses_what_comes_after(db: Database) -> None:
    issued = [_insert(db, f"late{index}") for index in range(3)]
    await asyncio.sleep(0)  # the statements are issued, not yet sent
    await db.close()
    await asyncio.gather(*issued)
    assert await asyncio.to_thread(_committed, db.path) == ["late0", "late1", "late2"]
    with pytest.raises(StoreError, match="not open"):
        await db.execute("SELECT 1")
