"""The one aiosqlite connection a store owns, and the lock that makes it safe to share.

aiosqlite runs every statement on one worker thread, but several coroutines can still
interleave their statements: a ``BEGIN`` of one and an ``INSERT`` of another would end up in
the same transaction. Every use of the connection therefore holds ``Database.lock``;
multi-statement work runs inside ``transaction()`` (``BEGIN IMMEDIATE``, so a second process on
the same file waits for the write lock up front instead of failing to upgrade a read).

sqlite3 errors are translated into ``StoreError`` here, at the boundary.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import aiosqlite

from bot.errors import StoreError

logger = logging.getLogger(__name__)

SqlValue = str | int | float | bytes | None
Params = tuple[SqlValue, ...]
Clock = Callable[[], datetime]
_ONE_TRIP = frozenset({"INSERT", "UPDATE"})
_NO_RESULT = frozenset({"BEGIN ", "COMMIT"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Written:
    """What a data-changing statement did."""

    rowcount: int
    lastrowid: int | None


class Session:
    """Statements on the shared connection; whoever holds one holds the lock."""

    __slots__ = ("_conn", "_path")

    def __init__(self, conn: aiosqlite.Connection, path: Path) -> None:
        self._conn = conn
        self._path = path

    async def rows(self, sql: str, params: Params = ()) -> list[sqlite3.Row]:
        try:
            return list(await self._conn.execute_fetchall(sql, params))
        except sqlite3.Error as exc:
            raise self._error(exc) from exc

    async def row(self, sql: str, params: Params = ()) -> sqlite3.Row | None:
        found = await self.rows(sql, params)
        return found[0] if found else None

    async def write(self, sql: str, params: Params = ()) -> Written:
        """Run one data-changing statement.

        INSERT and UPDATE take one trip to the connection's thread: the rowid comes back
        with the statement, the row count from the connection's change counter (the lock
        keeps other statements out; the one trigger, on marking an outbox row sent, adds its
        rows to that count, which nobody reads). Other statements
        (DELETE with its cascades) read the counts from their cursor; BEGIN and COMMIT
        have none to read.
        """
        try:
            verb = sql.lstrip()[:6].upper()
            if verb in _NO_RESULT:
                await self._conn.execute_fetchall(sql, params)
                return Written(rowcount=0, lastrowid=None)
            if verb in _ONE_TRIP:
                before = self._conn.total_changes
                last = await self._conn.execute_insert(sql, params)
                changed = self._conn.total_changes - before
                rowid = int(last[0]) if last is not None and changed else None
                return Written(rowcount=changed, lastrowid=rowid)
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
        return StoreError(f"store {self._path}: {exc}")


class Database:
    """Owns the connection: opening it with the right pragmas, locking, transactions."""

    def __init__(self, path: Path, *, clock: Clock, busy_timeout_s: float) -> None:
        self.path = path
        self._clock = clock
        self._busy_timeout_s = busy_timeout_s
        self._conn: aiosqlite.Connection | None = None
        self._lock = asyncio.Lock()

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
            await session.write(f"PRAGMA {pragma}")

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        async with self._lock:
            try:
                await conn.close()
            except sqlite3.Error as exc:
                raise StoreError(f"closing the store at {self.path}: {exc}") from exc

    def _connection(self) -> aiosqlite.Connection:
        if self._conn is None:
            raise StoreError(f"the store at {self.path} is not open")
        return self._conn

    @asynccontextmanager
    async def session(self) -> AsyncIterator[Session]:
        """Exclusive use of the connection for autocommit statements."""
        async with self._lock:
            yield Session(self._connection(), self.path)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Session]:
        """A write transaction: committed on success, rolled back on any exception."""
        async with self._lock:
            session = Session(self._connection(), self.path)
            try:
                await session.write("BEGIN IMMEDIATE")
                yield session
                await session.write("COMMIT")
            except BaseException:
                # A statement whose await was cancelled still runs on the worker thread; the
                # rollback is queued behind it, so it also undoes a BEGIN that "never returned".
                await session.rollback()
                raise

    async def rows(self, sql: str, params: Params = ()) -> list[sqlite3.Row]:
        async with self.session() as session:
            return await session.rows(sql, params)

    async def row(self, sql: str, params: Params = ()) -> sqlite3.Row | None:
        async with self.session() as session:
            return await session.row(sql, params)

    async def write(self, sql: str, params: Params = ()) -> Written:
        async with self.session() as session:
            return await session.write(sql, params)
