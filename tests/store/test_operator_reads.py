"""What the operator CLI relies on: opening the daemon's store beside it without creating or
migrating anything, and journal entries that carry their dedupe decisions. (Refusing a store
that is missing or at another schema version is backend machinery: ``test_sqlite_store.py``,
``test_postgres_store.py``.)"""

from __future__ import annotations

from tests.store.support import (
    START,
    BackendStore,
    ManualClock,
    StoreFactory,
    inbound,
    journal_entry,
    record,
)


async def test_open_existing_reads_beside_the_open_daemon_store(
    store: BackendStore, make_store: StoreFactory
) -> None:
    await store.settings.set("paused.fake", "1")  # ``store`` stays open, as a daemon's does
    reader = make_store()
    await reader.open_existing()
    try:
        assert await reader.settings.get("paused.fake") == "1"
        await reader.settings.set("paused.fake", None)
    finally:
        await reader.aclose()
    assert await store.settings.get("paused.fake") is None


async def test_entries_carry_their_duplicates(store: BackendStore, clock: ManualClock) -> None:
    entry_id = await record(store, inbound("m1"), "c")
    assert entry_id is not None
    entry = await journal_entry(store, "m1")
    assert entry is not None
    assert (entry.duplicates, entry.last_duplicate_at) == (0, None)
    await store.inbound.count_duplicate(inbound("m1"))
    later = clock.advance(3)
    await store.inbound.count_duplicate(inbound("m1"))
    (found,) = await store.inbound.find("telegram", "m1")
    assert (found.duplicates, found.last_duplicate_at) == (2, later)
    assert found.recorded_at == START


async def test_find_without_a_channel_looks_in_every_channel(store: BackendStore) -> None:
    await record(store, inbound("m1"), "c1")
    await record(store, inbound("m1", channel="slack"), "c2")
    await record(store, inbound("m1", chat_id="c2"), "c3")
    await record(store, inbound("m2"), "c4")
    found = await store.inbound.find(None, "m1")
    assert [entry.correlation_id for entry in found] == ["c1", "c2", "c3"]
    assert [entry.correlation_id for entry in await store.inbound.find("slack", "m1")] == ["c2"]
