"""Users, pairing codes, the audit log and settings."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from bot.records import PairingRequest, UserStatus
from tests.store.support import START, BackendStore, ManualClock, StoreFactory

HOUR = timedelta(hours=1)


def pairing(
    code: str, *, user: str = "u1", channel: str = "telegram", minutes: int = 0
) -> PairingRequest:
    created = START + timedelta(minutes=minutes)
    return PairingRequest(
        channel=channel,
        user_id=user,
        display_name=f"User {user}",
        chat_id=f"dm-{user}",
        code=code,
        created_at=created,
        expires_at=created + HOUR,
    )


async def test_user_status_is_upserted(store: BackendStore, clock: ManualClock) -> None:
    assert await store.access.status("telegram", "u1") is None
    await store.access.set_status("telegram", "u1", UserStatus.APPROVED, "telegram:admin")
    clock.advance(60)
    await store.access.set_status("telegram", "u1", UserStatus.DENIED, "cli")
    await store.access.set_status("slack", "u1", UserStatus.APPROVED, "cli")
    assert await store.access.status("telegram", "u1") is UserStatus.DENIED
    assert await store.access.status("slack", "u1") is UserStatus.APPROVED

    users = await store.access.users()
    assert [(u.channel, u.user_id, u.status) for u in users] == [
        ("slack", "u1", UserStatus.APPROVED),
        ("telegram", "u1", UserStatus.DENIED),
    ]
    telegram = await store.access.users("telegram")
    assert len(telegram) == 1
    assert (telegram[0].changed_by, telegram[0].changed_at) == ("cli", clock.now)


async def test_a_status_another_process_changes_is_seen_once_it_is_checked(
    make_store: StoreFactory,
) -> None:
    """Statuses are cached; the daemon's own changes show at once, another process's changes
    once the store next asks the database whether anyone else wrote (at most every check
    interval)."""
    async with (
        make_store(other_writers_check_s=3600) as daemon,
        make_store() as cli,
    ):
        assert await daemon.access.status("telegram", "u1") is None
        await daemon.access.set_status("telegram", "u1", UserStatus.DENIED, by="admin")
        assert await daemon.access.status("telegram", "u1") is UserStatus.DENIED
        await cli.access.set_status("telegram", "u1", UserStatus.APPROVED, by="cli")
        assert await daemon.access.status("telegram", "u1") is UserStatus.DENIED  # cached
    async with (
        make_store(other_writers_check_s=0) as daemon,
        make_store() as cli,
    ):
        assert await daemon.access.status("telegram", "u1") is UserStatus.APPROVED
        await cli.access.set_status("telegram", "u1", UserStatus.DENIED, by="cli")
        assert await daemon.access.status("telegram", "u1") is UserStatus.DENIED


async def test_a_status_read_racing_a_change_does_not_cache_the_old_value(
    store: BackendStore,
) -> None:
    await store.access.set_status("telegram", "u1", UserStatus.APPROVED, by="admin")
    assert await store.access.status("telegram", "u1") is UserStatus.APPROVED
    store_reads = [store.access.status("telegram", "u2") for _ in range(3)]
    await asyncio.gather(
        *store_reads, store.access.set_status("telegram", "u2", UserStatus.DENIED, by="admin")
    )
    assert await store.access.status("telegram", "u2") is UserStatus.DENIED


async def test_pending_pairings_are_unexpired_and_oldest_first(store: BackendStore) -> None:
    await store.access.add_pairing(pairing("B", user="u2", minutes=10))
    await store.access.add_pairing(pairing("A", user="u1", minutes=0))
    await store.access.add_pairing(pairing("S", user="u3", channel="slack", minutes=20))

    now = START + timedelta(minutes=30)
    assert [p.code for p in await store.access.pending_pairings(now)] == ["A", "B", "S"]
    assert [p.code for p in await store.access.pending_pairings(now, "slack")] == ["S"]
    later = START + HOUR + timedelta(minutes=5)  # A has expired
    assert [p.code for p in await store.access.pending_pairings(later)] == ["B", "S"]


async def test_pairing_for_user_finds_only_an_unexpired_request(store: BackendStore) -> None:
    request = pairing("A")
    await store.access.add_pairing(request)
    assert await store.access.pairing_for_user("telegram", "u1", START) == request
    assert await store.access.pairing_for_user("telegram", "u2", START) is None
    assert await store.access.pairing_for_user("slack", "u1", START) is None
    assert await store.access.pairing_for_user("telegram", "u1", START + HOUR) is None


async def test_a_pairing_code_is_taken_once(store: BackendStore) -> None:
    request = pairing("A")
    await store.access.add_pairing(request)
    taken = await asyncio.gather(*(store.access.take_pairing("A", START) for _ in range(5)))
    assert [t for t in taken if t is not None] == [request]
    assert await store.access.pending_pairings(START) == []


async def test_an_expired_code_is_not_taken_but_is_deleted(store: BackendStore) -> None:
    await store.access.add_pairing(pairing("A"))
    assert await store.access.take_pairing("A", START + HOUR) is None
    assert await store.access.take_pairing("A", START) is None  # gone for good
    assert await store.access.take_pairing("never-issued", START) is None


async def test_adding_a_request_clears_expired_ones(store: BackendStore) -> None:
    await store.access.add_pairing(pairing("OLD", user="u1"))
    await store.access.add_pairing(pairing("NEW", user="u2", minutes=90))
    assert await store.access.take_pairing("OLD", START) is None  # deleted, not merely hidden


async def test_drop_pairing(store: BackendStore) -> None:
    await store.access.add_pairing(pairing("A"))
    assert await store.access.drop_pairing("A")
    assert not await store.access.drop_pairing("A")
    assert await store.access.pending_pairings(START) == []


async def test_approved_users_survive_a_restart(make_store: StoreFactory) -> None:
    async with make_store() as store:
        await store.access.set_status("telegram", "u1", UserStatus.APPROVED, "cli")
    async with make_store() as store:
        assert await store.access.status("telegram", "u1") is UserStatus.APPROVED


async def test_audit_lists_newest_first(store: BackendStore, clock: ManualClock) -> None:
    for n in range(5):
        await store.audit.record(f"actor{n}", "approve", f"detail {n}")
        clock.advance(1)
    recent = await store.audit.recent(limit=3)
    assert [e.detail for e in recent] == ["detail 4", "detail 3", "detail 2"]
    assert recent[0].at == START + timedelta(seconds=4)
    assert (recent[0].actor, recent[0].action) == ("actor4", "approve")
    assert len(await store.audit.recent()) == 5


async def test_settings_set_get_overwrite_delete(store: BackendStore) -> None:
    assert await store.settings.get("paused") is None
    await store.settings.set("paused", "1")
    assert await store.settings.get("paused") == "1"
    await store.settings.set("paused", "0")
    assert await store.settings.get("paused") == "0"
    await store.settings.set("paused", None)
    assert await store.settings.get("paused") is None
    await store.settings.set("paused", None)  # deleting a missing setting is fine
    await store.settings.set("empty", "")
    assert await store.settings.get("empty") == ""
