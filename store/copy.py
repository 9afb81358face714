"""``switchboard store copy``: an existing SQLite installation moved into PostgreSQL (design §11).

The source file is only read: it is never created or migrated, and it must be at this build's
schema version (SQLite's ``user_version``). The target schema is migrated first and must hold
no rows in any table the copy writes; it is never merged into. Every table's rows then go over
in one PostgreSQL transaction, so a failure leaves the target as empty as it was.

The column mapping is derived from the two schemas, not written out per column: each SQLite
table's columns (``PRAGMA table_info``) go to the PostgreSQL columns of the same name, each
value converted to the target's type (``information_schema.columns``): ISO text times become
``timestamptz`` (UTC, microseconds kept), ISO text dates ``date``, JSON text goes to ``json``
as written, JSON-encoded lists become ``text[]`` / ``bigint[]``, 0 and 1 ``boolean``; ``''``
and NULL are spelled the same in both (``store.rows``). A PostgreSQL-only identity column
(``seq``: the order SQLite's rowid kept) takes the source row's rowid. Ids are kept, and each
identity sequence is then set past the largest id copied.

Triggers still fire on the target (the copying role need not own the tables to disable them):
they fire on updates only, or count cache writes (bookkeeping, not data). The outbox still goes
first (schemas before 10 had a trigger on its inserts that marked a reply's messages).
A table another references goes before it (``COPY_FIRST``), whatever order the source made
them in.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any, Final

from psycopg import AsyncConnection, sql

from bot.errors import StoreError
from bot.messages import utc_now
from store.codec import from_db_time
from store.postgres.db import PgDatabase
from store.postgres.schema import DEFAULT_SCHEMA, apply_migrations
from store.schema import latest_version

SOURCE_ONLY: Final = frozenset({"write_probe", "replicas"})
"""SQLite tables that are not data (the ``/readyz`` write probe, the replicas that ran on the
file) and are not copied."""
COPY_FIRST: Final = ("outbox", "approval_runs")
"""Copied before the rest: ``delivery_attempts`` references the outbox, ``approvals`` their
runs."""
ACTION: Final = "store copy"

Convert = Callable[[object], object]


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetColumn:
    name: str
    data_type: str
    element_type: str
    """``udt_name`` (``_text``, ``_int8``) for arrays; the same as ``data_type`` otherwise."""
    nullable: bool
    identity: bool
    has_default: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class TablePlan:
    """How one SQLite table's rows become PostgreSQL rows."""

    table: str
    select: str
    """The SQLite query, its columns in the order of ``columns``."""
    columns: tuple[str, ...]
    converts: tuple[Convert, ...]
    identities: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CopyResult:
    source: Path
    target: str
    """The target's URL without its password, and its schema."""
    tables: dict[str, int]
    """Rows copied per table, in the order they were copied."""

    @property
    def total(self) -> int:
        return sum(self.tables.values())


# --------------------------------------------------------------------------- the source


def _connect_read_only(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise StoreError(f"no SQLite store at {path}")
    try:
        conn = sqlite3.connect(
            f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False
        )
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read the SQLite store at {path}: {exc}") from exc
    return conn


def _check_version(conn: sqlite3.Connection, path: Path) -> int:
    current = int(conn.execute("PRAGMA user_version").fetchone()[0])
    latest = latest_version()
    if current > latest:
        raise StoreError(
            f"the SQLite store at {path} is at schema version {current}, newer than this"
            f" Switchboard ({latest}): run a newer switchboard to copy it"
        )
    if current < latest:
        raise StoreError(
            f"the SQLite store at {path} is at schema version {current}, older than this"
            f" Switchboard ({latest}): run this switchboard's daemon on it once first (it"
            " migrates at start), then copy it"
        )
    return current


def _source_tables(conn: sqlite3.Connection) -> dict[str, list[str]]:
    """Each data table's columns, in the source's order of creation."""
    names = [
        str(row[0])
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            " ORDER BY rowid"
        )
    ]
    return {
        name: [str(col[1]) for col in conn.execute(f"PRAGMA table_info({_quoted(name)})")]
        for name in names
        if name not in SOURCE_ONLY
    }


def _quoted(name: str) -> str:
    """A SQLite identifier (a name read from the source's own catalog), double-quoted."""
    escaped = name.replace('"', '""')
    return f'"{escaped}"'


def _has_rowid(conn: sqlite3.Connection, table: str) -> bool:
    try:
        conn.execute(f"SELECT rowid FROM {_quoted(table)} LIMIT 0")  # noqa: S608 - a table's name
    except sqlite3.OperationalError:
        return False  # WITHOUT ROWID
    return True


# --------------------------------------------------------------------------- conversions


def _time(value: object) -> object:
    if value is None:
        return None
    if not isinstance(value, str):
        raise StoreError(f"expected an ISO time, got {value!r}")
    return from_db_time(value)


def _list_of(kind: type) -> Convert:
    def convert(value: object) -> object:
        if value is None:
            return None
        items = json.loads(value) if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(v, kind) for v in items):
            raise StoreError(f"expected a JSON list of {kind.__name__}, got {value!r}")
        return items

    return convert


def _date(value: object) -> object:
    if value is None:
        return None
    if not isinstance(value, str):
        raise StoreError(f"expected an ISO date, got {value!r}")
    return date.fromisoformat(value)


def _json(value: object) -> object:
    if value is None:
        return None
    if not isinstance(value, str):
        raise StoreError(f"expected JSON text, got {value!r}")
    json.loads(value)  # refuse what PostgreSQL would, with the row's table named
    return value


def _same(value: object) -> object:
    return value


def _converter(column: TargetColumn) -> Convert:
    match column.data_type:
        case "timestamp with time zone":
            return _time
        case "date":
            return _date
        case "json" | "jsonb":
            return _json
        case "ARRAY" if column.element_type == "_text":
            return _list_of(str)
        case "ARRAY" if column.element_type in ("_int8", "_int4"):
            return _list_of(int)
        case "text" | "bigint" | "integer" | "boolean" | "double precision":
            return _same
    raise StoreError(f"no conversion to PostgreSQL column {column.name} ({column.data_type})")


def plan_tables(
    source: dict[str, list[str]],
    target: dict[str, dict[str, TargetColumn]],
    rowid_tables: frozenset[str],
) -> list[TablePlan]:
    """The copy of every source table, from the two schemas; ``StoreError`` when a source
    table or column has no place in the target, or a target column could not be filled."""
    plans: list[TablePlan] = []
    order = [t for t in COPY_FIRST if t in source] + [t for t in source if t not in COPY_FIRST]
    for table in order:
        columns = target.get(table)
        if columns is None:
            raise StoreError(f"the PostgreSQL schema has no table {table!r} for SQLite's rows")
        names = list(source[table])
        missing = [c for c in names if c not in columns]
        if missing:
            raise StoreError(f"the PostgreSQL table {table} has no column {missing[0]!r}")
        selects = [_quoted(c) for c in names]
        for name, column in columns.items():
            if name in names:
                continue
            if column.identity and table in rowid_tables:
                names.append(name)  # the order SQLite kept its rows in
                selects.append("rowid")
            elif not column.nullable and not column.has_default:
                raise StoreError(f"nothing in SQLite fills {table}.{name}")
        identities = tuple(n for n in names if columns[n].identity)
        plans.append(
            TablePlan(
                table=table,
                select=f"SELECT {', '.join(selects)} FROM {_quoted(table)}"  # noqa: S608 - names
                + (" ORDER BY rowid" if table in rowid_tables else ""),
                columns=tuple(names),
                converts=tuple(_converter(columns[n]) for n in names),
                identities=identities,
            )
        )
    return plans


def _read_rows(conn: sqlite3.Connection, plan: TablePlan) -> list[tuple[object, ...]]:
    rows: list[tuple[object, ...]] = []
    for raw in conn.execute(plan.select):
        try:
            rows.append(tuple(convert(v) for convert, v in zip(plan.converts, raw, strict=True)))
        except (StoreError, ValueError) as exc:
            raise StoreError(f"unreadable row in {plan.table}: {exc}") from exc
    return rows


def _read_table(conn: sqlite3.Connection, plan: TablePlan) -> list[tuple[object, ...]]:
    try:
        return _read_rows(conn, plan)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read {plan.table} from the SQLite store: {exc}") from exc


@dataclass(slots=True)
class _Snapshot:
    tables: dict[str, list[str]]
    rowid_tables: frozenset[str]


def _read_source(path: Path) -> tuple[sqlite3.Connection, _Snapshot]:
    conn = _connect_read_only(path)
    try:
        _check_version(conn, path)
        conn.execute("BEGIN")  # one snapshot for every table read below
        tables = _source_tables(conn)
        rowids = frozenset(t for t in tables if _has_rowid(conn, t))
    except sqlite3.Error as exc:
        conn.close()
        raise StoreError(f"cannot read the SQLite store at {path}: {exc}") from exc
    except BaseException:
        conn.close()
        raise
    return conn, _Snapshot(tables, rowids)


# --------------------------------------------------------------------------- the target


async def _target_columns(
    conn: AsyncConnection[Any], schema: str
) -> dict[str, dict[str, TargetColumn]]:
    cursor = await conn.execute(
        "SELECT table_name, column_name, data_type, udt_name, is_nullable, is_identity,"
        " column_default FROM information_schema.columns WHERE table_schema = %s"
        " ORDER BY table_name, ordinal_position",
        (schema,),
    )
    found: dict[str, dict[str, TargetColumn]] = {}
    for table, name, data_type, udt, nullable, identity, default in await cursor.fetchall():
        found.setdefault(str(table), {})[str(name)] = TargetColumn(
            name=str(name),
            data_type=str(data_type),
            element_type=str(udt),
            nullable=nullable == "YES",
            identity=identity == "YES",
            has_default=default is not None or identity == "YES",
        )
    return found


async def _occupied(conn: AsyncConnection[Any], tables: Sequence[str]) -> dict[str, int]:
    """Rows already in those tables of the target (only the ones holding some)."""
    held: dict[str, int] = {}
    for table in tables:
        query = sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))
        row = await (await conn.execute(query)).fetchone()
        if row is not None and row[0]:
            held[table] = int(row[0])
    return held


async def _write(
    conn: AsyncConnection[Any], plan: TablePlan, rows: list[tuple[object, ...]]
) -> None:
    if not rows:
        return
    copy = sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.Identifier(plan.table), sql.SQL(", ").join(map(sql.Identifier, plan.columns))
    )
    async with conn.cursor() as cursor, cursor.copy(copy) as feed:
        for row in rows:
            await feed.write_row(row)
    for column in plan.identities:
        await conn.execute(
            sql.SQL(
                "SELECT setval(pg_get_serial_sequence(%s, %s), coalesce(max({}), 0) + 1, false)"
                " FROM {}"
            ).format(sql.Identifier(column), sql.Identifier(plan.table)),
            (plan.table, column),
        )


async def copy_sqlite_to_postgres(
    source: Path,
    url: str,
    *,
    schema: str = DEFAULT_SCHEMA,
    actor: str,
    clock: Callable[[], datetime] = utc_now,
) -> CopyResult:
    """Copy the SQLite store at ``source`` into ``schema`` at ``url``; the rows per table.

    ``StoreError`` (nothing written but the target's migrations) when the source is missing
    or at another schema version, the target cannot be reached or migrated, or already holds
    rows. The audit entry (``actor``, "store copy") is written in the same transaction.
    """
    db = PgDatabase(url, schema=schema, clock=clock)
    source_conn, snapshot = await asyncio.to_thread(_read_source, source)
    try:
        async with db.direct() as conn:
            with db.translated():
                await apply_migrations(conn, schema)
                plans = plan_tables(
                    snapshot.tables, await _target_columns(conn, schema), snapshot.rowid_tables
                )
                async with conn.transaction():
                    await conn.execute(
                        sql.SQL("SET LOCAL search_path TO {}").format(sql.Identifier(schema))
                    )
                    await conn.execute("SET LOCAL TimeZone TO 'UTC'")
                    held = await _occupied(conn, [plan.table for plan in plans])
                    if held:
                        there = ", ".join(f"{n} {table} rows" for table, n in held.items())
                        raise StoreError(
                            f"the target {db.where} is not empty ({there}); store copy only"
                            " fills an empty store: drop that schema or choose another --schema"
                        )
                    counts: dict[str, int] = {}
                    for plan in plans:
                        rows = await asyncio.to_thread(_read_table, source_conn, plan)
                        await _write(conn, plan, rows)
                        counts[plan.table] = len(rows)
                    detail = f"from {source}: " + ", ".join(
                        f"{table} {n}" for table, n in counts.items()
                    )
                    await conn.execute(
                        "INSERT INTO audit (at, actor, action, detail) VALUES (%s, %s, %s, %s)",
                        (clock(), actor, ACTION, detail),
                    )
    finally:
        await asyncio.to_thread(source_conn.close)
    return CopyResult(source=source, target=db.where, tables=counts)
