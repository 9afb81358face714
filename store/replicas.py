"""The daemons running on this store, each heartbeating its row (design §11)."""

from __future__ import annotations

from datetime import datetime, timedelta

from typing_extensions import override

from bot.ports import ReplicaStore
from bot.records import Replica
from store.codec import to_db_time
from store.db import Database
from store.rows import Columns, replica


class SqliteReplicaStore(ReplicaStore):
    def __init__(self, db: Database) -> None:
        self._db = db

    @override
    async def register(self, replica: Replica) -> None:
        await self._db.execute(
            "INSERT INTO replicas (id, host, pid, version, backend, started_at, heartbeat_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid,"
            " version = excluded.version, backend = excluded.backend,"
            " started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at",
            (
                replica.id,
                replica.host,
                replica.pid,
                replica.version,
                replica.backend,
                to_db_time(replica.started_at),
                to_db_time(replica.heartbeat_at),
            ),
        )

    @override
    async def heartbeat(self, replica_id: str, at: datetime) -> bool:
        found = await self._db.row(
            "UPDATE replicas SET heartbeat_at = ? WHERE id = ? RETURNING id",
            (to_db_time(at), replica_id),
        )
        return found is not None

    @override
    async def deregister(self, replica_id: str) -> None:
        await self._db.execute("DELETE FROM replicas WHERE id = ?", (replica_id,))

    @override
    async def live(self, now: datetime, expiry_s: float) -> list[Replica]:
        since = now - timedelta(seconds=expiry_s)
        rows = await self._db.rows(
            "SELECT * FROM replicas WHERE heartbeat_at > ? ORDER BY started_at, id",
            (to_db_time(since),),
        )
        return [replica(Columns(row)) for row in rows]

    @override
    async def prune(self, before: datetime) -> int:
        rows = await self._db.rows(
            "DELETE FROM replicas WHERE heartbeat_at < ? RETURNING id", (to_db_time(before),)
        )
        return len(rows)
