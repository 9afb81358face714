"""The one aiosqlite connection a store owns, and the rule that makes it safe to share.

aiosqlite runs every statement on one worker thread, in the order they were submitted. Single
statements in autocommit mode are therefore queued straight away, without waiting for the
statement before them to come back: a message's journal write and another chat's outbox
insert travel to the thread together instead of taking turns (a round trip to the thread
costs far more than the statement). Only a transaction needs the connection to itself: while
one is open, a single statement waits to be queued until its ``COMMIT`` or rollback has been,
so it never lands inside someone else's transaction (and is never rolled back with it).
Transactions (``BEGIN IMMEDIATE``, so a second process on the same file waits for the write
lock up front instead of failing to upgrade a read) take turns among themselves.

Statements are made for one trip: ``execute`` when nothing is read back, ``rows``/``row`` for
queries and for ``INSERT``/``UPDATE ... RETURNING``, which is how a caller learns the id of a
new row or whether an update matched. ``write`` reads the row count and last row id from the
statement's own cursor, which costs a second trip (for rare maintenance statements).

sqlite3 errors are translated into ``StoreError`` here, at the boundary.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import aiosqlite

from bot.errors import StoreBusy, StoreError
from store.cache import OTHER_WRITERS_CHECK_S, OtherWriters

logger = logging.getLogger(__name__)

SqlValue = str | int | float | bytes | None
Params = tuple[SqlValue, ...]
Clock = Callable[[], datetime]
Gate = Callable[[], Awaitable[None]]


@dataclass(slots=True)
class _Batch:
    """Parameter rows of one statement, gathered while the loop finishes its iteration."""

    sql: str
    rows: list[Params]
    flush: asyncio.Task[None] = field(init=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class Written:
    """What a data-changing statement did."""

    rowcount: int
    lastrowid: int | None


async def _open_gate() -> None:
    """Inside a transaction the connection is already ours."""


class Session:
    """Statements on the shared connection, each queued once ``gate`` lets it through."""

    __slots__ = ("_conn", "_gate", "_path")

    def __init__(self, conn: aiosqlite.Connection, path: Path, gate: Gate = _open_gate) -> None:
        self._conn = conn
        self._path = path
        self._gate = gate

    async def rows(self, sql: str, params: Params = ()) -> list[sqlite3.Row]:
        await self._gate()
        try:
            return list(await self._conn.execute_fetchall(sql, params))
        except sqlite3.Error as exc:
            raise self._error(exc) from exc

    async def row(self, sql: str, params: Params = ()) -> sqlite3.Row | None:
        found = await self.rows(sql, params)
        return found[0] if found else None

    async def execute(self, sql: str, params: Params = ()) -> None:
        """Run a statement whose outcome nobody reads, in one trip."""
        await self.rows(sql, params)

    async def execute_many(self, sql: str, rows: Sequence[Params]) -> None:
        """Run one statement for each parameter row (two trips: the rows, closing the cursor)."""
        await self._gate()
        try:
            cursor = await self._conn.executemany(sql, rows)
            await cursor.close()
        except sqlite3.Error as exc:
            raise self._error(exc) from exc

    async def write(self, sql: str, params: Params = ()) -> Written:
        """Run a statement and report its row count and last row id (two trips)."""
        await self._gate()
        try:
            async with self._conn.execute(sql, params) as cursor:
                return Written(rowcount=cursor.rowcount, lastrowid=cursor.lastrowid)
        except sqlite3.Error as exc:
            raise self._error(exc) from exc

    async def rollback(self) -> None:
        """Roll back if a transaction is open (a no-op otherwise)."""
        try:
            await self._conn.rollback()
        except sqlite3.Error as exc:
            raise self._error(exc) from exc

    def _error(self, exc: sqlite3.Error) -> StoreError:
        code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
        if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            return StoreBusy(f"store {self._path}: {exc}")
        return StoreError(f"store {self._path}: {exc}")


class Database:
    """Owns the connection: opening it with the right pragmas, locking, transactions."""

    def __init__(
        self,
        path: Path,
        *,
        clock: Clock,
        busy_timeout_s: float,
        other_writers_check_s: float = OTHER_WRITERS_CHECK_S,
    ) -> None:
        self.path = path
        self._clock = clock
        self._busy_timeout_s = busy_timeout_s
        self._conn: aiosqlite.Connection | None = None
        self._lock = asyncio.Lock()
        """Held by a transaction (and by ``close``) from ``BEGIN`` until its end is queued."""
        self._no_transaction = asyncio.Event()
        self._no_transaction.set()
        self._batches: dict[str, _Batch] = {}
        self._flushes: set[asyncio.Task[None]] = set()
        self._other_writers = OtherWriters(other_writers_check_s)

    @property
    def is_open(self) -> bool:
        return self._conn is not None

    def now(self) -> datetime:
        return self._clock()

    async def connect(self) -> None:
        """Open the file in WAL mode; statements autocommit unless in ``transaction()``."""
        if self._conn is not None:
            return
        try:
            await asyncio.to_thread(self.path.parent.mkdir, parents=True, exist_ok=True)
            conn = await aiosqlite.connect(
                self.path, isolation_level=None, timeout=self._busy_timeout_s
            )
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the store at {self.path}: {exc}") from exc
        conn.row_factory = sqlite3.Row
        self._conn = conn
        try:
            await self._configure(Session(conn, self.path))
        except StoreError:
            await self.close()
            raise

    async def _configure(self, session: Session) -> None:
        busy_ms = int(self._busy_timeout_s * 1000)
        mode = await session.row("PRAGMA journal_mode=WAL")
        if mode is None or str(mode[0]).lower() != "wal":
            logger.warning("store %s is not in WAL mode (%s)", self.path, mode and mode[0])
        for pragma in ("synchronous=NORMAL", "foreign_keys=ON", f"busy_timeout={busy_ms}"):
            await session.execute(f"PRAGMA {pragma}")

    async def close(self) -> None:
        if self._flushes:  # batched statements already promised to their callers
            await asyncio.gather(*self._flushes, return_exceptions=True)
        conn, self._conn = self._conn, None
        if conn is None:
            return
        async with self._lock:
            try:
                await conn.close()
            except sqlite3.Error as exc:
                raise StoreError(f"closing the store at {self.path}: {exc}") from exc

    async def generation(self) -> int:
        """A number that grows once another connection (the CLI) has committed a change.

        Caches of rows this process also writes itself stay valid while it is unchanged:
        SQLite's ``data_version`` moves only for other connections' commits. Asked at most
        once per ``other_writers_check_s`` (``OtherWriters``).
        """

        async def data_version() -> object:
            found = await self.row("PRAGMA data_version")
            return None if found is None else int(found[0])

        return await self._other_writers.generation(data_version)

    def _connection(self) -> aiosqlite.Connection:
        if self._conn is None:
            raise StoreError(f"the store at {self.path} is not open")
        return self._conn

    async def _outside_transactions(self) -> None:
        """Return (without suspending, when possible) once no transaction is open.

        Re-checked after every wake-up: another transaction may have begun in between.
        Nothing suspends between this returning and the statement being queued.
        """
        while not self._no_transaction.is_set():
            await self._no_transaction.wait()

    def shared(self) -> Session:
        """Autocommit statements, queued alongside other coroutines' statements."""
        return Session(self._connection(), self.path, self._outside_transactions)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Session]:
        """A write transaction: committed on success, rolled back on any exception."""
        async with self._lock:
            session = Session(self._connection(), self.path)
            self._no_transaction.clear()
            try:
                await session.execute("BEGIN IMMEDIATE")
                yield session
                await session.execute("COMMIT")
            except BaseException:
                # A statement whose await was cancelled still runs on the worker thread; the
                # rollback is queued behind it, so it also undoes a BEGIN that "never returned".
                await session.rollback()
                raise
            finally:
                self._no_transaction.set()

    async def rows(self, sql: str, params: Params = ()) -> list[sqlite3.Row]:
        return await self.shared().rows(sql, params)

    async def row(self, sql: str, params: Params = ()) -> sqlite3.Row | None:
        return await self.shared().row(sql, params)

    async def execute(self, sql: str, params: Params = ()) -> None:
        await self.shared().execute(sql, params)

    async def write(self, sql: str, params: Params = ()) -> Written:
        return await self.shared().write(sql, params)

    async def execute_batched(self, sql: str, params: Params) -> None:
        """``execute``, sent together with every other call of the same statement made before
        the event loop's next iteration (one ``executemany`` for all of them).

        For statements many coroutines issue at once (marking journal entries, marking outbox
        rows sent): each caller still returns only once its row is written, and gets the
        batch's error if it failed. The batch is written by a task of the database's own, so
        a caller that is cancelled does not take the others' rows with it.
        """
        batch = self._batches.get(sql)
        if batch is None:
            batch = self._batches[sql] = _Batch(sql=sql, rows=[])
            batch.flush = asyncio.get_running_loop().create_task(
                self._flush(batch), name="store:batch"
            )
            self._flushes.add(batch.flush)
            batch.flush.add_done_callback(self._flushes.discard)
        batch.rows.append(params)
        await asyncio.shield(batch.flush)

    async def _flush(self, batch: _Batch) -> None:
        if self._batches.get(batch.sql) is batch:
            del self._batches[batch.sql]  # calls from now on start the next batch
        session = self.shared()
        if len(batch.rows) == 1:
            await session.execute(batch.sql, batch.rows[0])
        else:
            await session.execute_many(batch.sql, batch.rows)
