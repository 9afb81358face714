"""This daemon among the replicas of one store: its identity, registration and heartbeat
(design §11, §13).

Each daemon gets a replica id, stable for the process: ``daemon.replica_id`` or
``<hostname>-<pid>-<random>`` (the random part tells a restarted process with a recycled pid
from the one before). It registers in the store's ``replicas`` table before it serves, moves
its heartbeat every few seconds from the kernel task ``replica`` (so a store that stays busy
or unreachable is handled like any kernel loop's), and removes its row on a clean stop. A
replica is live while its heartbeat is younger than ``daemon.replica_expiry_s``; one killed
with -9 simply stops being live, and its row is pruned a day later by whoever starts next.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import logging
import os
import secrets
import socket
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Final

from bot.config.settings import Settings
from bot.errors import StoreError
from bot.messages import utc_now
from bot.ports import ReplicaStore, Store
from bot.records import Replica

logger = logging.getLogger(__name__)

HEARTBEAT_MAX_S: Final = 5.0
"""The heartbeat interval at most; a third of the expiry when that is shorter."""
PRUNE_AFTER: Final = timedelta(days=1)
"""Rows of replicas silent this long (killed, never deregistered) are removed at a start."""
UNKNOWN_VERSION: Final = "unknown"


def new_replica_id(configured: str | None = None) -> str:
    """``configured``, else ``<hostname>-<pid>-<6 hex digits>``."""
    if configured:
        return configured
    host = socket.gethostname() or "localhost"
    return f"{host}-{os.getpid()}-{secrets.token_hex(3)}"


def installed_version() -> str:
    """This Switchboard's version (reads the package metadata: call it off the loop)."""
    try:
        return importlib.metadata.version("switchboard")
    except importlib.metadata.PackageNotFoundError:
        return UNKNOWN_VERSION


async def identify(settings: Settings, *, clock: Callable[[], datetime] = utc_now) -> Replica:
    """This process as a replica, started now."""
    version = await asyncio.to_thread(installed_version)
    now = clock()
    return Replica(
        id=new_replica_id(settings.daemon.replica_id),
        host=socket.gethostname(),
        pid=os.getpid(),
        version=version,
        backend=str(settings.store.backend),
        started_at=now,
        heartbeat_at=now,
    )


def heartbeat_interval(expiry_s: float) -> float:
    """Often enough that two beats can be missed before the replica stops being live."""
    return min(HEARTBEAT_MAX_S, expiry_s / 3)


class ReplicaHeartbeat:
    """Registers ``replica``, keeps its heartbeat fresh (``run``, a kernel loop), deregisters."""

    def __init__(
        self,
        store: ReplicaStore,
        replica: Replica,
        *,
        expiry_s: float,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.replica = replica
        self._store = store
        self._clock = clock
        self.interval_s = heartbeat_interval(expiry_s)
        self.beats = 0
        """Heartbeats written so far (for tests and logs)."""
        self.after_beat: list[Callable[[], Awaitable[None]]] = []
        """Run after each heartbeat of ``run`` (the shared send budget's refresh)."""

    async def register(self) -> None:
        """Record this replica as live, and forget replicas silent for a day."""
        now = self._clock()
        pruned = await self._store.prune(now - PRUNE_AFTER)
        if pruned:
            logger.info("forgot %d replica(s) silent for over %s", pruned, PRUNE_AFTER)
        await self._store.register(self._fresh(now))
        logger.info(
            "replica %s registered (pid %d, %s store, heartbeat every %.1fs)",
            self.replica.id,
            self.replica.pid,
            self.replica.backend,
            self.interval_s,
        )

    async def beat(self) -> None:
        """One heartbeat; registers again if the row went missing meanwhile."""
        now = self._clock()
        if not await self._store.heartbeat(self.replica.id, now):
            logger.warning("replica %s had no row any more; registering again", self.replica.id)
            await self._store.register(self._fresh(now))
        self.beats += 1

    async def run(self) -> None:
        """Beat now, then every ``interval_s`` until cancelled: the start-up between
        ``register`` and this loop must not make the replica look gone to the others."""
        while True:
            await self.beat()
            for then in self.after_beat:
                await then()
            await asyncio.sleep(self.interval_s)

    async def deregister(self) -> None:
        """Remove this replica's row (a clean stop); a failure is logged, the stop goes on."""
        try:
            await self._store.deregister(self.replica.id)
        except StoreError as exc:
            logger.warning("replica %s could not deregister: %s", self.replica.id, exc)
            return
        logger.info("replica %s deregistered", self.replica.id)

    def _fresh(self, now: datetime) -> Replica:
        return Replica(
            id=self.replica.id,
            host=self.replica.host,
            pid=self.replica.pid,
            version=self.replica.version,
            backend=self.replica.backend,
            started_at=self.replica.started_at,
            heartbeat_at=now,
        )


async def wake_others(store: Store) -> None:
    """After a clean stop, tell the other replicas to take what this one left (queued turns
    it did not start, messages journaled for its chats) now rather than at their next sweep."""
    if store.leases.shared:
        try:
            await store.leases.wake(["*"])
        except StoreError as exc:
            logger.warning("could not wake the other replicas: %s", exc)
