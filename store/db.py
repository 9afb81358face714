"""The one SQLite connection a store owns, and the rule that makes it safe to share.

Statements go to the connection's own thread (``store/writer.py``). Everything the event
loop's coroutines issue during one iteration travels there as one job, and consecutive
autocommit statements are committed together as one transaction: a message's journal write and
another chat's outbox insert reach SQLite together, and their callers are answered together,
once the ``COMMIT`` returned. Only a transaction needs the connection to itself: while one is
open, a single statement waits to be queued until its ``COMMIT`` or rollback has been, so it
never lands inside someone else's transaction (and is never rolled back with it).
Transactions (``BEGIN IMMEDIATE``, so a second process on the same file waits for the write
lock up front instead of failing to upgrade a read) take turns among themselves.

Statements are made for one trip: ``execute`` when nothing is read back, ``rows``/``row`` for
queries and for ``INSERT``/``UPDATE ... RETURNING``, which is how a caller learns the id of a
new row or whether an update matched; ``write`` reports the row count. ``Database`` is the
``store.dialect.Backend`` the table stores are written against.

sqlite3 errors are translated into ``StoreError`` here, at the boundary.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import cast

from bot.errors import StoreBusy, StoreError
from store.cache import OTHER_WRITERS_CHECK_S, OtherWriters
from store.dialect import SQLITE, Dialect
from store.writer import Op, OpKind, Params, Writer

logger = logging.getLogger(__name__)

__all__ = ["Clock", "Database", "Params", "SqliteSession"]

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600

Clock = Callable[[], datetime]
Gate = Callable[[], Awaitable[None]]
Enqueue = Callable[[Op], None]


async def _open_gate() -> None:
    """Inside a transaction the connection is already ours."""


class SqliteSession:
    """Statements on the shared connection, each queued once ``gate`` lets it through.

    ``grouped`` statements may be committed together with their neighbours; a transaction's
    own statements are not (they are its body)."""

    __slots__ = ("_enqueue", "_gate", "_grouped", "_path")

    def __init__(
        self, enqueue: Enqueue, path: Path, gate: Gate = _open_gate, *, grouped: bool = False
    ) -> None:
        self._enqueue = enqueue
        self._path = path
        self._gate = gate
        self._grouped = grouped

    async def _run(
        self, kind: OpKind, sql: str, params: Params = (), many: Sequence[Params] = ()
    ) -> object:
        await self._gate()
        future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        grouped = self._grouped
        op = Op(kind=kind, sql=sql, params=params, many=list(many), grouped=grouped, future=future)
        self._enqueue(op)
        try:
            return await future
        except sqlite3.Error as exc:
            raise translate(self._path, exc) from exc

    async def rows(self, sql: str, params: Params = ()) -> list[sqlite3.Row]:
        return cast(list[sqlite3.Row], await self._run(OpKind.ROWS, sql, params))

    async def row(self, sql: str, params: Params = ()) -> sqlite3.Row | None:
        found = await self.rows(sql, params)
        return found[0] if found else None

    async def execute(self, sql: str, params: Params = ()) -> None:
        """Run a statement whose outcome nobody reads."""
        await self._run(OpKind.ROWS, sql, params)

    async def execute_many(self, sql: str, rows: Sequence[Params]) -> None:
        """Run one statement for each parameter row."""
        await self._run(OpKind.MANY, sql, many=rows)

    async def write(self, sql: str, params: Params = ()) -> int:
        """Run a statement and report how many rows it changed."""
        return cast(int, await self._run(OpKind.WRITE, sql, params))

    async def rollback(self) -> None:
        """Roll back if a transaction is open (a no-op otherwise)."""
        await self._run(OpKind.ROLLBACK, "")


def translate(path: Path, exc: sqlite3.Error) -> StoreError:
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return StoreBusy(f"store {path}: {exc}")
    return StoreError(f"store {path}: {exc}")


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
        self._writer: Writer | None = None
        self._lock = asyncio.Lock()
        """Held by a transaction (and by ``close``) from ``BEGIN`` until its end is queued."""
        self._no_transaction = asyncio.Event()
        self._no_transaction.set()
        self._pending: list[Op] = []
        """Statements issued during this loop iteration: one job for the writer's thread."""
        self._batched: dict[str, Op] = {}
        self._other_writers = OtherWriters(other_writers_check_s)

    @property
    def is_open(self) -> bool:
        return self._writer is not None

    @property
    def dialect(self) -> Dialect:
        return SQLITE

    @property
    def where(self) -> str:
        return str(self.path)

    @property
    def wakeups(self) -> int:
        """How many times the connection's thread woke up for statements (tests read it)."""
        return 0 if self._writer is None else self._writer.wakeups

    def now(self) -> datetime:
        return self._clock()

    async def connect(self) -> None:
        """Open the file in WAL mode; statements autocommit unless in ``transaction()``."""
        if self._writer is not None:
            return
        writer = Writer(self.path, busy_timeout_s=self._busy_timeout_s)
        try:
            await asyncio.to_thread(_create_private, self.path)
            await writer.open()
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the store at {self.path}: {exc}") from exc
        self._writer = writer
        try:
            await self._configure(self.shared())
        except StoreError:
            await self.close()
            raise

    async def _configure(self, session: SqliteSession) -> None:
        busy_ms = int(self._busy_timeout_s * 1000)
        mode = await session.row("PRAGMA journal_mode=WAL")
        if mode is None or str(mode[0]).lower() != "wal":
            logger.warning("store %s is not in WAL mode (%s)", self.path, mode and mode[0])
        for pragma in ("synchronous=NORMAL", "foreign_keys=ON", f"busy_timeout={busy_ms}"):
            await session.execute(f"PRAGMA {pragma}")

    async def close(self) -> None:
        """Run every statement already issued (their callers were promised them), then close."""
        if self._writer is None:
            return
        async with self._lock:
            self._flush()
            writer, self._writer = self._writer, None
            await writer.close()

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

    def _enqueue(self, op: Op) -> None:
        self._check_open()
        if not self._pending:
            asyncio.get_running_loop().call_soon(self._flush)
        self._pending.append(op)

    def _flush(self) -> None:
        """Hand this iteration's statements to the connection's thread as one job."""
        ops, self._pending = self._pending, []
        self._batched.clear()
        if ops and self._writer is not None:
            self._writer.submit(ops)

    def _check_open(self) -> None:
        if self._writer is None:
            raise StoreError(f"the store at {self.path} is not open")

    async def _outside_transactions(self) -> None:
        """Return (without suspending, when possible) once no transaction is open.

        Re-checked after every wake-up: another transaction may have begun in between.
        Nothing suspends between this returning and the statement being queued.
        """
        while not self._no_transaction.is_set():
            await self._no_transaction.wait()

    def shared(self) -> SqliteSession:
        """Autocommit statements, queued alongside other coroutines' statements."""
        self._check_open()
        return SqliteSession(self._enqueue, self.path, self._outside_transactions, grouped=True)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[SqliteSession]:
        """A write transaction: committed on success, rolled back on any exception."""
        async with self._lock:
            self._check_open()
            session = SqliteSession(self._enqueue, self.path)
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

    async def write(self, sql: str, params: Params = ()) -> int:
        return await self.shared().write(sql, params)

    async def execute_batched(self, sql: str, params: Params) -> None:
        """``execute``, sent as one ``executemany`` with every other call of the same
        statement made during this loop iteration.

        For statements many coroutines issue at once (marking journal entries, marking outbox
        rows sent): each caller still returns only once its row is committed, and gets the
        batch's error if it failed; a caller that is cancelled does not take the others' rows
        with it.
        """
        await self._outside_transactions()
        op = self._batched.get(sql)
        if op is None:
            future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
            op = Op(kind=OpKind.MANY, sql=sql, future=future)
            self._enqueue(op)
            self._batched[sql] = op
        op.many.append(params)
        try:
            await asyncio.shield(op.future)
        except sqlite3.Error as exc:
            raise translate(self.path, exc) from exc


def _create_private(path: Path) -> None:
    """The database file and its missing folders, private whatever the umask: SQLite gives the
    -wal and -shm files the database file's mode. An existing file is left as it is."""
    missing = []
    for directory in (path.parent, *path.parent.parents):
        if directory.is_dir():
            break
        missing.append(directory)
    for directory in reversed(missing):
        directory.mkdir(mode=PRIVATE_DIR_MODE, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, PRIVATE_FILE_MODE)
    except FileExistsError:
        return
    os.close(fd)
