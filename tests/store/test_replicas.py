"""The replicas table: daemons register, heartbeat and deregister; live ones are listed."""

from __future__ import annotations

from datetime import timedelta

from bot.records import Replica
from tests.store.support import START, BackendStore, StoreFactory

EXPIRY_S = 15.0


def replica(replica_id: str, *, pid: int = 100, seconds: float = 0) -> Replica:
    at = START + timedelta(seconds=seconds)
    return Replica(
        id=replica_id,
        host="host-a",
        pid=pid,
        version="0.1.0",
        backend="sqlite",
        started_at=at,
        heartbeat_at=at,
    )


async def test_a_registered_replica_is_live_until_its_heartbeat_expires(
    store: BackendStore,
) -> None:
    await store.replicas.register(replica("a"))
    assert await store.replicas.live(START, EXPIRY_S) == [replica("a")]
    assert await store.replicas.live(START + timedelta(seconds=14.9), EXPIRY_S) == [replica("a")]
    assert await store.replicas.live(START + timedelta(seconds=15), EXPIRY_S) == []


async def test_a_heartbeat_keeps_a_replica_live(store: BackendStore) -> None:
    await store.replicas.register(replica("a"))
    beat = START + timedelta(seconds=10)
    assert await store.replicas.heartbeat("a", beat) is True
    later = START + timedelta(seconds=20)
    (found,) = await store.replicas.live(later, EXPIRY_S)
    assert (found.id, found.started_at, found.heartbeat_at) == ("a", START, beat)


async def test_a_heartbeat_of_an_unknown_replica_says_so(store: BackendStore) -> None:
    assert await store.replicas.heartbeat("nobody", START) is False
    assert await store.replicas.live(START, EXPIRY_S) == []


async def test_deregistered_replicas_are_gone(store: BackendStore) -> None:
    await store.replicas.register(replica("a"))
    await store.replicas.register(replica("b", pid=200, seconds=1))
    await store.replicas.deregister("a")
    assert [r.id for r in await store.replicas.live(START, EXPIRY_S)] == ["b"]
    assert await store.replicas.heartbeat("a", START) is False


async def test_registering_again_replaces_the_row(store: BackendStore) -> None:
    await store.replicas.register(replica("a"))
    await store.replicas.register(replica("a", pid=7, seconds=30))
    now = START + timedelta(seconds=31)
    assert await store.replicas.live(now, EXPIRY_S) == [replica("a", pid=7, seconds=30)]


async def test_live_replicas_are_listed_oldest_first(store: BackendStore) -> None:
    for name, seconds in (("c", 2), ("a", 0), ("b", 1)):
        await store.replicas.register(replica(name, seconds=seconds))
    assert [r.id for r in await store.replicas.live(START, EXPIRY_S)] == ["a", "b", "c"]


async def test_prune_removes_only_replicas_silent_since_before(store: BackendStore) -> None:
    await store.replicas.register(replica("old"))
    await store.replicas.register(replica("new", seconds=100))
    assert await store.replicas.prune(START + timedelta(seconds=50)) == 1
    assert await store.replicas.prune(START + timedelta(seconds=50)) == 0
    now = START + timedelta(seconds=100)
    assert [r.id for r in await store.replicas.live(now, EXPIRY_S)] == ["new"]


async def test_two_stores_see_each_others_replicas(make_store: StoreFactory) -> None:
    async with make_store() as first, make_store() as second:
        await first.replicas.register(replica("a"))
        await second.replicas.register(replica("b", seconds=1))
        for store in (first, second):
            assert [r.id for r in await store.replicas.live(START, EXPIRY_S)] == ["a", "b"]
