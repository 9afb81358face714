"""The daemons running on this store, each heartbeating its row (design §11)."""

from __future__ import annotations

from datetime import datetime, timedelta

from typing_extensions import override

from bot.ports import ReplicaStore
from bot.records import Replica
from store.dialect import Backend
from store.rows import replica


class SqlReplicaStore(ReplicaStore):
    def __init__(self, db: Backend) -> None:
        self._db = db
        self._time = db.dialect.time

    @override
    async def register(self, replica: Replica) -> None:
        r = replica
        await self._db.execute(
            "INSERT INTO replicas (id, host, pid, version, backend, started_at, heartbeat_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid,"
            " version = excluded.version, backend = excluded.backend,"
            " started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at",
            (
                r.id,
                r.host,
                r.pid,
                r.version,
                r.backend,
                self._time(r.started_at),
                self._time(r.heartbeat_at),
            ),
        )

    @override
    async def heartbeat(self, replica_id: str, at: datetime) -> bool:
        changed = await self._db.write(
            "UPDATE replicas SET heartbeat_at = ? WHERE id = ?", (self._time(at), replica_id)
        )
        return changed > 0

    @override
    async def deregister(self, replica_id: str) -> None:
        await self._db.execute("DELETE FROM replicas WHERE id = ?", (replica_id,))

    @override
    async def live(self, now: datetime, expiry_s: float) -> list[Replica]:
        since = self._time(now - timedelta(seconds=expiry_s))
        rows = await self._db.rows(
            "SELECT * FROM replicas WHERE heartbeat_at > ? ORDER BY started_at, id", (since,)
        )
        return [replica(self._db.dialect.columns(row)) for row in rows]

    @override
    async def prune(self, before: datetime) -> int:
        return await self._db.write(
            "DELETE FROM replicas WHERE heartbeat_at < ?", (self._time(before),)
        )
