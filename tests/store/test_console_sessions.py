"""Logged-out console sessions on both backends: a logout is seen by a second store on the
same data (another replica, the daemon after a restart), and expired entries are purged."""

from __future__ import annotations

from datetime import timedelta

from tests.store.support import START, BackendStore, StoreFactory


async def test_a_logout_is_seen_by_a_second_store_and_purged_after_expiry(
    store: BackendStore, make_store: StoreFactory
) -> None:
    table = store.console_sessions
    await table.revoke("nonce-a", START + timedelta(hours=1), START)
    await table.revoke("nonce-a", START + timedelta(hours=1), START)  # twice: no error
    await table.revoke("nonce-b", START + timedelta(hours=3), START)
    async with make_store() as other:
        assert await other.console_sessions.revoked("nonce-a")
        assert not await other.console_sessions.revoked("nonce-c")
    assert await table.purge(START + timedelta(hours=2)) == 1
    assert not await table.revoked("nonce-a")
    await table.revoke("nonce-c", START + timedelta(hours=5), START + timedelta(hours=4))
    assert not await table.revoked("nonce-b")  # expired by then: purged on the way
    assert await table.revoked("nonce-c")
