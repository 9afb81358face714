"""The daemons running on this store, each heartbeating its row, on PostgreSQL (design §11)."""

from __future__ import annotations

from datetime import datetime, timedelta

from typing_extensions import override

from bot.ports import ReplicaStore
from bot.records import Replica
from store.codec import to_utc
from store.postgres.db import PgDatabase
from store.postgres.rows import PgColumns
from store.rows import replica


class PgReplicaStore(ReplicaStore):
    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    @override
    async def register(self, replica: Replica) -> None:
        await self._db.execute(
            "INSERT INTO replicas (id, host, pid, version, backend, started_at, heartbeat_at)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s)"
            " ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid,"
            " version = excluded.version, backend = excluded.backend,"
            " started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at",
            (
                replica.id,
                replica.host,
                replica.pid,
                replica.version,
                replica.backend,
                to_utc(replica.started_at),
                to_utc(replica.heartbeat_at),
            ),
        )

    @override
    async def heartbeat(self, replica_id: str, at: datetime) -> bool:
        changed = await self._db.write(
            "UPDATE replicas SET heartbeat_at = %s WHERE id = %s", (to_utc(at), replica_id)
        )
        return changed > 0

    @override
    async def deregister(self, replica_id: str) -> None:
        await self._db.execute("DELETE FROM replicas WHERE id = %s", (replica_id,))

    @override
    async def live(self, now: datetime, expiry_s: float) -> list[Replica]:
        since = to_utc(now) - timedelta(seconds=expiry_s)
        rows = await self._db.rows(
            "SELECT * FROM replicas WHERE heartbeat_at > %s ORDER BY started_at, id", (since,)
        )
        return [replica(PgColumns(row)) for row in rows]

    @override
    async def prune(self, before: datetime) -> int:
        return await self._db.write(
            "DELETE FROM replicas WHERE heartbeat_at < %s", (to_utc(before),)
        )
