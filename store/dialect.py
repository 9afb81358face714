"""What the table stores (``store/inbound.py`` ...) ask of a backend, and how its SQL differs.

Every table store is written once, against ``Backend``: SQLite's ``store.db.Database`` (one
connection on its group-commit thread) and PostgreSQL's ``store.postgres.db.PgDatabase`` (a
pool) both are one. SQL is written with ``?`` placeholders; the PostgreSQL session turns them
into psycopg's ``%s``. What the two engines spell differently (times, lists of strings or ids,
the column that keeps insertion order) comes from the backend's ``Dialect``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from store.codec import encode_list, to_db_time
from store.rows import Columns, Row

Params = Sequence[object]


class Session(Protocol):
    """Statements on one connection, or (a ``Backend`` itself) each on whichever is free."""

    async def rows(self, sql: str, params: Params = ()) -> Sequence[Row]:
        """A query's rows (also those of ``... RETURNING``)."""
        ...

    async def row(self, sql: str, params: Params = ()) -> Row | None: ...

    async def execute(self, sql: str, params: Params = ()) -> None: ...

    async def write(self, sql: str, params: Params = ()) -> int:
        """Run a data-changing statement; how many rows it changed."""
        ...


class Backend(Session, Protocol):
    @property
    def dialect(self) -> Dialect: ...

    @property
    def is_open(self) -> bool: ...

    @property
    def where(self) -> str:
        """The store, as error messages name it."""
        ...

    def now(self) -> datetime: ...

    async def generation(self) -> int:
        """A number that grows once another process has committed a change."""
        ...

    def transaction(self) -> AbstractAsyncContextManager[Session]:
        """Committed on success, rolled back on any exception."""
        ...

    async def execute_batched(self, sql: str, params: Params) -> None:
        """``execute``, possibly sent together with other calls of the same statement."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Dialect:
    columns: Callable[[Row], Columns]
    """Reads a row's columns as the engine returns them."""
    time: Callable[[datetime], object]
    """A timezone-aware datetime as a parameter."""
    array: Callable[[Sequence[str] | Sequence[int]], object]
    """A list of strings or ids as a parameter."""
    strings: str
    """The placeholder of a list-of-strings column's value."""
    ids: str
    """The placeholder of a list-of-ids column's value."""
    in_strings: str
    """``{}`` (a column) is one of the list of strings given as the one parameter."""
    in_ids: str
    """``{}`` (a column) is one of the list of ids given as the one parameter."""
    seq: str
    """The column that keeps the order rows were inserted in (ties in ``created_at``)."""
    chat_leases: bool
    """Whether chats are leased to replicas (``chat_leases``; PostgreSQL only)."""
    hour_start: str
    """The start (UTC) of the hour of ``{}`` (a time), read back as a time column."""
    day_start: str
    """The start (UTC) of the day of ``{}`` (a time), read back as a time column."""
    try_lock: str
    """Run in a transaction: one row whose ``held`` says whether the transaction now holds
    the lock named by the one parameter, until it ends (another holds it: false)."""


SQLITE = Dialect(
    columns=Columns,
    time=to_db_time,
    array=encode_list,
    strings="?",
    ids="?",
    in_strings="{} IN (SELECT value FROM json_each(?))",
    in_ids="{} IN (SELECT value FROM json_each(?))",
    seq="rowid",
    chat_leases=False,
    hour_start="(substr({}, 1, 13) || ':00:00.000000+00:00')",
    day_start="(substr({}, 1, 10) || 'T00:00:00.000000+00:00')",
    try_lock="SELECT ? IS NOT NULL AS held",
)
"""SQLite: times are ISO text, lists are JSON text (read with ``json_each``); a time's hour
and day are a prefix of its text (``store.codec``'s fixed shape), completed to a time. A
write transaction (``BEGIN IMMEDIATE``) excludes every other writer: its lock is always held."""
