"""Forward-only PostgreSQL migrations, numbered ``store/postgres/migrations/NNNN_name.sql``.

Each applied migration is a row of ``schema_version`` in the store's schema. Pending ones run
in one transaction (PostgreSQL's DDL is transactional, so a failing script leaves the previous
schema intact), under an advisory lock on the schema's name taken before that transaction
begins: replicas starting together apply them once; the others wait, then find the work done.
The schema itself is created by the first migration run if it does not exist. A schema from
a newer Switchboard is refused rather than guessed at.

A store that is up to date is only read (``schema_version``), never locked or altered, so a
role without the right to create schemas can run the daemon once the schema exists.

Unlike SQLite's, a script is sent whole: psycopg runs a statement string without parameters
as one simple query, and PL/pgSQL bodies (``$$ ... $$``) need no splitting.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Any, Final

from psycopg import AsyncConnection, sql

from bot.errors import StoreError
from bot.messages import utc_now
from store.postgres.db import PgDatabase
from store.schema import Migration, check_current, check_not_newer, read_migrations

logger = logging.getLogger(__name__)

DEFAULT_SCHEMA: Final = "switchboard"
LOCK_PREFIX: Final = "switchboard:migrate:"
"""Hashed with the schema's name into the advisory lock key (``hashtext``)."""


def _whole(script: str) -> tuple[str, ...]:
    return (script,)


@functools.cache
def load_migrations() -> tuple[Migration, ...]:
    """PostgreSQL's migrations (``store/postgres/migrations``), one script each."""
    return read_migrations("store.postgres", _whole)


def latest_version() -> int:
    migrations = load_migrations()
    return migrations[-1].version if migrations else 0


async def schema_version(conn: AsyncConnection[Any], schema: str) -> int | None:
    """The schema's version; ``None`` when it has no Switchboard tables (or does not exist).

    Existence is read from the catalog tables, as of now: ``to_regclass`` would consult the
    session's catalog cache, which may not yet know of a table another session just made.
    """
    cursor = await conn.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c"
        " JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %s AND c.relname = 'schema_version')",
        (schema,),
    )
    found = await cursor.fetchone()
    if found is None or not found[0]:
        return None
    cursor = await conn.execute(
        sql.SQL("SELECT coalesce(max(version), 0) FROM {}").format(
            sql.Identifier(schema, "schema_version")
        )
    )
    found = await cursor.fetchone()
    return 0 if found is None else int(found[0])


async def require_current(conn: AsyncConnection[Any], schema: str) -> int:
    """The schema version, which must be this build's: for a process that must not migrate."""
    latest = (await asyncio.to_thread(load_migrations))[-1].version
    current = await schema_version(conn, schema)
    if current is None:
        raise StoreError(
            f"no Switchboard store in schema {schema!r}; has the daemon run with this store.url"
            " and store.schema?"
        )
    upgrade = "run `switchboard store migrate` or (re)start the daemon once to upgrade it"
    return check_current(current, latest, upgrade)


async def _schema_exists(conn: AsyncConnection[Any], schema: str) -> bool:
    """Whether the schema exists (the operator may have made it, with its grants)."""
    cursor = await conn.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = %s)", (schema,)
    )
    found = await cursor.fetchone()
    return found is not None and bool(found[0])


async def apply_migrations(conn: AsyncConnection[Any], schema: str) -> list[int]:
    """Bring ``schema`` up to date on an autocommit connection; the versions applied.

    The advisory lock is taken before the migrations' transaction begins, not inside it: a
    transaction that began before another session's DDL committed may still look tables up
    in a catalog cache that has not heard of them.
    """
    migrations = await asyncio.to_thread(load_migrations)
    latest = migrations[-1].version if migrations else 0
    current = await schema_version(conn, schema)
    check_not_newer(current or 0, latest)
    if current == latest:
        return []
    lock = LOCK_PREFIX + schema
    await conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (lock,))
    try:
        return await _apply_locked(conn, schema, migrations)
    finally:
        if not conn.closed:
            await conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (lock,))


async def _apply_locked(
    conn: AsyncConnection[Any], schema: str, migrations: tuple[Migration, ...]
) -> list[int]:
    latest = migrations[-1].version
    name = sql.Identifier(schema)
    async with conn.transaction():
        current = await schema_version(conn, schema)  # another replica may have been first
        check_not_newer(current or 0, latest)
        if current is None and not await _schema_exists(conn, schema):
            # IF NOT EXISTS: the agent's checkpointer may be creating it at the same moment.
            await conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(name))
        await conn.execute(sql.SQL("SET LOCAL search_path TO {}").format(name))
        applied: list[int] = []
        for migration in migrations[current or 0 :]:
            for statement in migration.statements:
                await conn.execute(statement.encode())
            await conn.execute(
                "INSERT INTO schema_version (version, name) VALUES (%s, %s)",
                (migration.version, migration.name),
            )
            logger.info("store schema %s: applied migration %s", schema, migration.name)
            applied.append(migration.version)
    return applied


async def migrate(url: str, schema: str = DEFAULT_SCHEMA) -> list[int]:
    """Apply pending migrations to ``schema`` at ``url`` (``switchboard store migrate``).

    Returns the versions applied, oldest first (``[]``: it was up to date). Safe while
    daemons run on the same schema: they take the same lock when they start.
    """
    db = PgDatabase(url, schema=schema, clock=utc_now)
    async with db.direct() as conn:
        with db.translated():
            return await apply_migrations(conn, schema)
