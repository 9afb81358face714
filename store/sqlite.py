"""The Store port on SQLite (design §11): one file in WAL mode, one connection on its own
thread (``store.db``, ``store.writer``).

The table stores (``store.tables``) share this store's ``Database`` (connection, transaction
gate, clock). A second ``SqliteStore`` on the same file (the CLI while the daemon runs) works:
WAL lets it read while the daemon writes, and ``busy_timeout`` makes writers queue for the
lock. The single-instance lock of ``switchboard run`` is not this class's job.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Final

from typing_extensions import override

from bot.errors import StoreError
from bot.messages import utc_now
from store.cache import OTHER_WRITERS_CHECK_S
from store.db import Clock, Database
from store.leases import SqliteLeaseStore
from store.schema import migrate, require_current
from store.tables import Tables

logger = logging.getLogger(__name__)

DB_FILENAME: Final = "switchboard.db"


class SqliteStore(Tables):
    """Durable state in ``path``; use ``async with`` or ``open()`` / ``aclose()``.

    ``clock`` stamps rows the store creates (``recorded_at``, an outbox row's first
    ``next_attempt_at``); give it the clock the rest of the daemon uses.
    ``other_writers_check_s`` bounds how long a cached row (a user's access status) can
    miss a change another process committed.
    """

    def __init__(
        self,
        path: Path,
        *,
        clock: Clock = utc_now,
        busy_timeout_s: float = 5.0,
        other_writers_check_s: float = OTHER_WRITERS_CHECK_S,
    ) -> None:
        self._db = Database(
            path,
            clock=clock,
            busy_timeout_s=busy_timeout_s,
            other_writers_check_s=other_writers_check_s,
        )
        super().__init__(self._db)
        self._leases = SqliteLeaseStore()

    @classmethod
    def from_state_dir(cls, state_dir: Path, *, clock: Clock = utc_now) -> SqliteStore:
        return cls(state_dir / DB_FILENAME, clock=clock)

    @property
    def path(self) -> Path:
        return self._db.path

    @property
    @override
    def leases(self) -> SqliteLeaseStore:
        return self._leases

    @override
    async def open(self) -> None:
        """Connect and migrate; raises ``StoreError`` naming the file on any failure."""
        if self._db.is_open:
            return
        await self._db.connect()
        try:
            version = await migrate(self._db)
        except StoreError as exc:
            await self._db.close()
            raise StoreError(f"cannot open the store at {self.path}: {exc}") from exc
        except BaseException:
            await self._db.close()
            raise
        logger.info("store opened: %s (schema %d)", self.path, version)

    @override
    async def open_existing(self) -> None:
        """Connect to the daemon's file without creating or migrating it (the operator CLI)."""
        if self._db.is_open:
            return
        if not await asyncio.to_thread(self.path.is_file):
            raise StoreError(f"no database at {self.path}; has the daemon run with this state_dir?")
        await self._db.connect()
        try:
            await require_current(self._db)
        except BaseException:
            await self._db.close()
            raise

    @override
    async def aclose(self) -> None:
        if self._db.is_open:
            await self._db.close()
            logger.info("store closed: %s", self.path)
