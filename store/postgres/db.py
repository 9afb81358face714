"""A pool of psycopg connections to one schema, and the rules every statement follows.

Each statement outside a transaction borrows a pooled connection for one trip and autocommits;
``transaction()`` holds one connection from ``BEGIN`` to ``COMMIT`` (or rollback, on any
exception, a cancellation included). Unlike SQLite's one connection, statements of different
coroutines run side by side on up to ``pool_size`` connections, and PostgreSQL's row locks,
not a lock of this process, keep their writes apart, whether they come from this process or
another replica.

Every pooled connection is set up the same way when it is made: ``search_path`` is the store's
schema (so the SQL names tables without a schema), ``TimeZone`` is UTC, ``lock_timeout``
bounds how long a statement waits for a row another connection holds (then ``StoreBusy``),
``json`` columns read back as their text (decoded by ``store.codec``), and
``switchboard.writer`` names this store so that ``generation`` can tell its own writes from
other processes'. Statements are not prepared on the server (``prepare_threshold=None``): a
prepared ``SELECT *`` fails once a newer replica's migration has added a column, and a
connection pooler in transaction mode cannot keep prepared statements anyway.

psycopg's errors become ``StoreError`` / ``StoreBusy`` here, at the boundary
(``store.postgres.errors``). ``PgDatabase`` is the ``store.dialect.Backend`` the table stores
are written against: their SQL says ``?`` where psycopg wants ``%s`` (``native``); only SQL with
named parameters (the leases') is psycopg's own.

A daemon's store also ``listen``s, on a connection of its own outside the pool, to the channel
the ``cache_writes`` trigger notifies (``notify_channel``): another replica's ``/allow`` empties
this one's caches as soon as it commits, instead of at the next periodic check. If that
connection drops, the periodic check takes over until it is back (``OtherWriters``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, TypeVar

import psycopg
from psycopg import AsyncConnection, sql
from psycopg.rows import DictRow, dict_row
from psycopg.types.string import TextLoader
from psycopg_pool import AsyncConnectionPool

from bot.backoff import Backoff
from bot.errors import StoreError
from store.cache import OTHER_WRITERS_CHECK_S, OtherWriters
from store.dialect import Dialect
from store.postgres.dialect import POSTGRES
from store.postgres.errors import store_error
from store.postgres.server import Server

logger = logging.getLogger(__name__)

Clock = Callable[[], datetime]
Params = Sequence[object] | Mapping[str, object]
T = TypeVar("T")

LOCK_TIMEOUT_S: Final = 5.0
"""How long a statement waits for a lock another connection holds before it is ``StoreBusy``
(SQLite's ``busy_timeout``)."""
POOL_WAIT_S: Final = 10.0
"""How long a statement waits for a free pooled connection before it is ``StoreBusy``."""
WRITER_SETTING: Final = "switchboard.writer"
"""The session setting the ``cache_writes`` trigger reads (migration 0001)."""
LISTEN_APPLICATION: Final = "switchboard-listen"
"""The ``application_name`` of the listening connection (to tell it apart in
``pg_stat_activity``)."""
LISTEN_RETRY: Final = Backoff(base_s=1.0, cap_s=30.0)
"""How soon a dropped listening connection is made again."""
CHANNEL_NAME_BYTES: Final = 63
"""PostgreSQL's longest identifier, and so channel name."""


def notify_channel(schema: str) -> str:
    """The channel the ``cache_writes`` trigger notifies for ``schema`` (migration 0002)."""
    return f"switchboard_{schema}".encode()[:CHANNEL_NAME_BYTES].decode(errors="ignore")


def wake_channel(schema: str) -> str:
    """The channel replicas of ``schema`` wake each other on (``store.postgres.leases``)."""
    return f"switchboard_wake_{schema}".encode()[:CHANNEL_NAME_BYTES].decode(errors="ignore")


@dataclass(frozen=True, slots=True, kw_only=True)
class Tuning:
    pool_size: int = 5
    """Connections at most; one is opened at start, more while statements wait for one."""
    lock_timeout_s: float = LOCK_TIMEOUT_S
    other_writers_check_s: float = OTHER_WRITERS_CHECK_S


def quote_identifier(name: str) -> str:
    """``name`` as a double-quoted SQL identifier (for ``search_path``)."""
    escaped = name.replace('"', '""')
    return f'"{escaped}"'


@functools.lru_cache(maxsize=512)
def _percent_s(sql: str) -> str:
    return sql.replace("%", "%%").replace("?", "%s")


def native(sql: str, params: Params) -> str:
    """``sql`` as psycopg reads it: ``?`` placeholders become ``%s`` (and a literal ``%``,
    ``%%``) when the parameters are positional; named ones (``%(me)s``) are psycopg's already.
    No statement of the store has a ``?`` of its own (a literal, or a JSON operator)."""
    return sql if isinstance(params, Mapping) else _percent_s(sql)


class PgSession:
    """Statements on one connection: a pooled one for a single trip, or a transaction's."""

    __slots__ = ("_conn", "_db")

    def __init__(self, conn: AsyncConnection[DictRow], db: PgDatabase) -> None:
        self._conn = conn
        self._db = db

    async def rows(self, sql: str, params: Params = ()) -> list[DictRow]:
        """A query's rows (also those of ``INSERT/UPDATE/DELETE ... RETURNING``)."""
        with self._db.translated():
            cursor = await self._conn.execute(native(sql, params), params)
            return await cursor.fetchall()

    async def row(self, sql: str, params: Params = ()) -> DictRow | None:
        found = await self.rows(sql, params)
        return found[0] if found else None

    async def execute(self, sql: str, params: Params = ()) -> None:
        """Run a statement that returns no rows."""
        with self._db.translated():
            await self._conn.execute(native(sql, params), params)

    async def write(self, sql: str, params: Params = ()) -> int:
        """Run a data-changing statement; how many rows it changed (still one trip)."""
        with self._db.translated():
            cursor = await self._conn.execute(native(sql, params), params)
            return cursor.rowcount


class PgDatabase:
    """Owns the pool: opening it on a schema, transactions, errors, other writers."""

    def __init__(self, url: str, *, schema: str, clock: Clock, tuning: Tuning = Tuning()) -> None:
        if tuning.pool_size < 1:
            raise ValueError(f"pool_size must be at least 1, not {tuning.pool_size}")
        self.server = Server.parse(url)
        self.schema = schema
        self.where = f"{self.server.url_for_logs} (schema {schema})"
        self._url = url
        self._pool_size = tuning.pool_size
        self._clock = clock
        self._lock_timeout_ms = max(1, round(tuning.lock_timeout_s * 1000))
        self._writer = secrets.token_hex(8)
        self._other_writers = OtherWriters(tuning.other_writers_check_s)
        self._pool: AsyncConnectionPool[AsyncConnection[DictRow]] | None = None
        self._listener: asyncio.Task[None] | None = None
        self.wake_listeners: list[Callable[[str], None]] = []
        """Called with the payload of each wake-up another replica sends (``wake_channel``)."""

    @property
    def url(self) -> str:
        """The connection URL, password included: for connections of this store's own."""
        return self._url

    @property
    def is_open(self) -> bool:
        return self._pool is not None

    @property
    def dialect(self) -> Dialect:
        return POSTGRES

    @property
    def listening(self) -> bool:
        """Whether other writers' changes arrive as notifications right now."""
        return self._other_writers.listening

    def now(self) -> datetime:
        return self._clock()

    @contextmanager
    def translated(self) -> Iterator[None]:
        """psycopg's errors raised inside become the store's, naming this store."""
        try:
            yield
        except psycopg.Error as exc:
            raise store_error(exc, self.where, self.server.scrub) from exc

    @asynccontextmanager
    async def direct(self) -> AsyncIterator[AsyncConnection[Any]]:
        """A connection of its own, outside the pool and without its setup (migrations).

        Failing to connect is a plain ``StoreError`` naming the server's host and port.
        """
        try:
            conn = await AsyncConnection.connect(self._url, autocommit=True, **self.server.defaults)
        except psycopg.Error as exc:
            raise StoreError(
                f"cannot connect to PostgreSQL at {self.server.address}"
                f" ({self.server.url_for_logs}): {self.server.scrub(str(exc))}"
            ) from exc
        async with conn:
            yield conn

    async def connect(self, prepare: Callable[[AsyncConnection[Any]], Awaitable[T]]) -> T:
        """Run ``prepare`` (migrate, or check the schema) on a direct connection, then open
        the pool; returns what ``prepare`` returned."""
        if self._pool is not None:
            raise StoreError(f"the store at {self.where} is open already")
        async with self.direct() as conn:
            try:
                prepared = await prepare(conn)
            except psycopg.Error as exc:
                raise store_error(exc, self.where, self.server.scrub) from exc
            except StoreError as exc:  # the schema is not one to open: say which
                raise type(exc)(f"store {self.where}: {exc}") from exc
        pool = AsyncConnectionPool(
            self._url,
            connection_class=AsyncConnection[DictRow],
            kwargs={
                "autocommit": True,
                "row_factory": dict_row,
                "prepare_threshold": None,
                **self.server.defaults,
            },
            min_size=1,
            max_size=self._pool_size,
            open=False,
            configure=self._configure,
            timeout=POOL_WAIT_S,
            name=f"switchboard:{self.schema}",
        )
        try:
            with self.translated():
                await pool.open(wait=True, timeout=POOL_WAIT_S)
        except BaseException:
            await pool.close()
            raise
        self._pool = pool
        return prepared

    async def _configure(self, conn: AsyncConnection[DictRow]) -> None:
        conn.adapters.register_loader("json", TextLoader)
        await conn.execute(
            "SELECT set_config('search_path', %s, false), set_config('TimeZone', 'UTC', false),"
            " set_config('lock_timeout', %s, false), set_config(%s, %s, false)",
            (
                quote_identifier(self.schema),
                f"{self._lock_timeout_ms}ms",
                WRITER_SETTING,
                self._writer,
            ),
        )

    async def close(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.cancel()
            await asyncio.gather(listener, return_exceptions=True)
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    async def listen(self) -> None:
        """Start listening for other writers' changes (a task this database owns, ended by
        ``close``); returns once the first attempt has connected or failed."""
        if self._listener is not None:
            return
        attempted = asyncio.Event()
        self._listener = asyncio.create_task(
            self._listen(attempted), name=f"store:listen:{self.schema}"
        )
        await attempted.wait()

    async def _listen(self, attempted: asyncio.Event) -> None:
        channel, wakes = notify_channel(self.schema), wake_channel(self.schema)
        failures = 0
        while True:
            try:
                conn = await AsyncConnection.connect(
                    self._url,
                    autocommit=True,
                    **{**self.server.defaults, "application_name": LISTEN_APPLICATION},
                )
                async with conn:
                    await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(wakes)))
                    await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
                    self._other_writers.set_listening(True)
                    attempted.set()
                    if failures:
                        logger.info("store %s: listening for other replicas again", self.where)
                    failures = 0
                    async for note in conn.notifies():
                        if note.channel == wakes:
                            for listener in self.wake_listeners:
                                listener(note.payload)
                        elif note.payload != self._writer:
                            self._other_writers.nudge()
            except (psycopg.Error, OSError) as exc:
                failures += 1
                if failures == 1:
                    logger.warning(
                        "store %s: not listening for other replicas' changes (%s); checking"
                        " every %.0fs until it is back",
                        self.where,
                        self.server.scrub(str(exc)),
                        self._other_writers.check_s,
                    )
            finally:
                if self._other_writers.listening:
                    self._other_writers.set_listening(False)
                attempted.set()
            await asyncio.sleep(LISTEN_RETRY.delay(max(failures, 1)))

    def _open_pool(self) -> AsyncConnectionPool[AsyncConnection[DictRow]]:
        if self._pool is None:
            raise StoreError(f"the store at {self.where} is not open")
        return self._pool

    @asynccontextmanager
    async def shared(self) -> AsyncIterator[PgSession]:
        """A pooled connection for autocommit statements."""
        pool = self._open_pool()
        with self.translated():
            async with pool.connection() as conn:
                yield PgSession(conn, self)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[PgSession]:
        """A transaction: committed on success, rolled back on any exception."""
        pool = self._open_pool()
        with self.translated():
            async with pool.connection() as conn, conn.transaction():
                yield PgSession(conn, self)

    async def rows(self, sql: str, params: Params = ()) -> list[DictRow]:
        async with self.shared() as session:
            return await session.rows(sql, params)

    async def row(self, sql: str, params: Params = ()) -> DictRow | None:
        async with self.shared() as session:
            return await session.row(sql, params)

    async def execute(self, sql: str, params: Params = ()) -> None:
        async with self.shared() as session:
            await session.execute(sql, params)

    async def write(self, sql: str, params: Params = ()) -> int:
        async with self.shared() as session:
            return await session.write(sql, params)

    async def execute_batched(self, sql: str, params: Params) -> None:
        """``execute``: the pool runs statements side by side, with nothing to batch."""
        await self.execute(sql, params)

    async def generation(self) -> int:
        """A number that grows once another process (another replica, the CLI) has changed
        a row that caches keep: users, or which thread a conversation has.

        Triggers count such changes per writer in ``cache_writes``, each under the
        ``switchboard.writer`` of the connection that made it; this store adds up everyone
        else's. Its own writes keep its caches right by themselves, as with SQLite's
        ``data_version``. Asked at most once per ``other_writers_check_s`` (``OtherWriters``).
        """

        async def others() -> object:
            found = await self.row(
                "SELECT coalesce(sum(changes), 0)::bigint AS n FROM cache_writes WHERE writer <> ?",
                (self._writer,),
            )
            return None if found is None else found["n"]

        return await self._other_writers.generation(others)
