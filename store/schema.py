"""Forward-only schema migrations, numbered ``store/migrations/NNNN_name.sql``.

The applied version is ``PRAGMA user_version``. Pending migrations run in one
``BEGIN IMMEDIATE`` transaction (SQLite DDL is transactional), so a crash or a failing script
leaves the previous schema intact, and a second process opening the same new file waits and
then finds the work done. A database from a newer Switchboard is refused rather than guessed at.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.resources
import logging
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from bot.errors import StoreError
from store.db import Database, SqliteSession

logger = logging.getLogger(__name__)

_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


@dataclass(frozen=True, slots=True, kw_only=True)
class Migration:
    version: int
    name: str
    statements: tuple[str, ...]


def split_statements(script: str) -> tuple[str, ...]:
    """Complete SQL statements of a script (``executescript`` would commit our transaction)."""
    statements: list[str] = []
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip())
            pending = ""
    leftover = [ln for ln in pending.splitlines() if ln.strip() and not ln.strip().startswith("--")]
    if leftover:
        raise StoreError(f"incomplete SQL statement at the end of a migration: {leftover[0]!r}")
    return tuple(statements)


def read_migrations(package: str, split: Callable[[str], tuple[str, ...]]) -> tuple[Migration, ...]:
    """The migrations packaged in ``package``'s ``migrations`` folder, in order; their numbers
    must run 1, 2, 3, ... without gaps. ``split`` cuts a script into what is run at once."""
    folder = importlib.resources.files(package).joinpath("migrations")
    found: list[Migration] = []
    for entry in folder.iterdir():
        match = _NAME.match(entry.name)
        if match is None:
            continue
        statements = split(entry.read_text(encoding="utf-8"))
        found.append(Migration(version=int(match[1]), name=entry.name, statements=statements))
    found.sort(key=lambda m: m.version)
    for expected, migration in enumerate(found, start=1):
        if migration.version != expected:
            raise StoreError(f"migration {migration.name} is out of sequence (expected {expected})")
    return tuple(found)


@functools.cache
def load_migrations() -> tuple[Migration, ...]:
    """SQLite's migrations (``store/migrations``), as statements."""
    return read_migrations("store", split_statements)


def latest_version() -> int:
    migrations = load_migrations()
    return migrations[-1].version if migrations else 0


async def _user_version(session: SqliteSession) -> int:
    row = await session.row("PRAGMA user_version")
    return int(row[0]) if row is not None else 0


def check_not_newer(current: int, latest: int) -> None:
    if current > latest:
        raise StoreError(
            f"database schema version {current} is newer than this Switchboard ({latest})"
        )


def check_current(current: int, latest: int, upgrade: str) -> int:
    """``current``, if it is this build's version; else ``StoreError`` (``upgrade`` says how
    to bring an older schema up to date). For a process that must not migrate."""
    check_not_newer(current, latest)
    if current < latest:
        raise StoreError(
            f"database schema version {current} is older than this Switchboard ({latest});"
            f" {upgrade}"
        )
    return current


async def require_current(db: Database) -> int:
    """The schema version, which must be this build's: for a process that must not migrate."""
    latest = (await asyncio.to_thread(load_migrations))[-1].version
    current = await _user_version(db.shared())
    return check_current(current, latest, "(re)start the daemon once to upgrade it")


async def migrate(db: Database) -> int:
    """Bring the schema up to date; returns the version it is at."""
    migrations = await asyncio.to_thread(load_migrations)
    latest = migrations[-1].version if migrations else 0
    current = await _user_version(db.shared())
    check_not_newer(current, latest)
    if current == latest:
        return current
    async with db.transaction() as tx:
        current = await _user_version(tx)
        check_not_newer(current, latest)
        for migration in migrations[current:]:
            for statement in migration.statements:
                await tx.execute(statement)
            logger.info("store %s: applied migration %s", db.path, migration.name)
        await tx.execute(f"PRAGMA user_version = {latest:d}")
    return latest
