"""The Store port on PostgreSQL (design §11): a psycopg pool on one schema of one database.

The table stores (``store.tables``) share this store's ``PgDatabase`` (pool, clock,
errors). Several stores may work on one schema at once: replicas of the daemon, the operator
CLI beside them. Their writes meet in the database's unique keys and row locks, never in a
lock of this process. Every table lives in ``schema`` (created when missing), so a database
can be shared with other applications and tests can use a schema each.
"""

from __future__ import annotations

import logging

from typing_extensions import override

from bot.messages import utc_now
from store.cache import OTHER_WRITERS_CHECK_S
from store.postgres.db import LOCK_TIMEOUT_S, Clock, PgDatabase, Tuning
from store.postgres.leases import PgLeaseStore
from store.postgres.schema import DEFAULT_SCHEMA, apply_migrations, latest_version, require_current
from store.tables import Tables

logger = logging.getLogger(__name__)


class PostgresStore(Tables):
    """Durable state in ``schema`` at ``url``; use ``async with`` or ``open()`` / ``aclose()``.

    ``pool_size`` bounds the connections this store holds. ``clock`` stamps rows the store
    creates; give it the clock the rest of the daemon uses. ``lock_timeout_s`` bounds how long
    a statement waits for a row lock before it is ``StoreBusy``; ``other_writers_check_s``
    how long a cached row (a user's access status) can miss another process's change when
    nobody tells this store of it: with ``listen`` (the daemon's store, ``from_url``), ``open``
    also LISTENs for other writers' changes, which then reach the caches as they commit.
    Nothing connects before ``open``; a malformed ``url`` is a ``ConfigError`` at once.
    """

    def __init__(  # noqa: PLR0913 - the store's settings, each with a default
        self,
        url: str,
        *,
        schema: str = DEFAULT_SCHEMA,
        pool_size: int = 5,
        clock: Clock = utc_now,
        lock_timeout_s: float = LOCK_TIMEOUT_S,
        other_writers_check_s: float = OTHER_WRITERS_CHECK_S,
        listen: bool = False,
    ) -> None:
        self._listen = listen
        tuning = Tuning(
            pool_size=pool_size,
            lock_timeout_s=lock_timeout_s,
            other_writers_check_s=other_writers_check_s,
        )
        self._db = PgDatabase(url, schema=schema, clock=clock, tuning=tuning)
        super().__init__(self._db)
        self._leases = PgLeaseStore(self._db)

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        schema: str = DEFAULT_SCHEMA,
        pool_size: int = 5,
        clock: Clock = utc_now,
    ) -> PostgresStore:
        """The store ``store.url`` / ``store.schema`` / ``store.pool_size`` configure; it
        listens for other replicas' changes once ``open`` (never for ``open_existing``)."""
        return cls(url, schema=schema, pool_size=pool_size, clock=clock, listen=True)

    @property
    def schema(self) -> str:
        return self._db.schema

    @property
    def url_for_logs(self) -> str:
        """``postgresql://USER@HOST:PORT/DATABASE``: never the password."""
        return self._db.server.url_for_logs

    @property
    def describe(self) -> str:
        """What this store is, for logs and ``status``: URL (no password) and schema."""
        return self._db.where

    @override
    async def open(self) -> None:
        """Connect, create the schema if missing and migrate it (under the advisory lock
        replicas share), then open the pool. ``StoreError`` naming the server on failure."""
        if self._db.is_open:
            return
        applied = await self._db.connect(lambda conn: apply_migrations(conn, self._db.schema))
        if self._listen:
            await self._db.listen()
        logger.info(
            "store opened: %s, version %d (%d migrations applied)",
            self.describe,
            latest_version(),
            len(applied),
        )

    @override
    async def open_existing(self) -> None:
        """Connect to the daemon's schema without creating or migrating it (the operator
        CLI); ``StoreError`` when it is missing or not at this build's version."""
        if self._db.is_open:
            return
        await self._db.connect(lambda conn: require_current(conn, self._db.schema))

    @override
    async def aclose(self) -> None:
        if self._db.is_open:
            await self._db.close()
            logger.info("store closed: %s", self.describe)

    @property
    @override
    def leases(self) -> PgLeaseStore:
        return self._leases
