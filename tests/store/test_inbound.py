"""The inbound journal: dedupe, crash recovery, tracing and pruning."""

from __future__ import annotations

import asyncio
from datetime import UTC, timedelta

from bot.records import InboundStatus
from tests.store.support import (
    BackendStore,
    ManualClock,
    StoreFactory,
    inbound,
    journal_entry,
    key,
    record,
)


async def test_a_redelivered_message_is_recorded_once(store: BackendStore) -> None:
    first = await record(store, inbound("m1"), "corr-1")
    again = await record(store, inbound("m1", text="edited text"), "corr-2")
    assert first is not None
    assert again is None
    entry = await journal_entry(store, "m1")
    assert entry is not None
    assert entry.id == first
    assert entry.correlation_id == "corr-1"
    assert entry.message.text == "hello"


async def test_dedupe_is_per_channel_account_and_chat(store: BackendStore) -> None:
    ids = [
        await record(store, inbound("m1"), "a"),
        await record(store, inbound("m1", chat_id="c2"), "b"),
        await record(store, inbound("m1", account_id="bot2"), "c"),
        await record(store, inbound("m1", channel="slack"), "d"),
    ]
    assert None not in ids
    assert len(set(ids)) == 4


async def test_concurrent_redeliveries_journal_one_entry(store: BackendStore) -> None:
    results = await asyncio.gather(*(record(store, inbound("m1"), "c") for _ in range(10)))
    assert sum(r is not None for r in results) == 1


async def test_dedupe_survives_closing_and_reopening(make_store: StoreFactory) -> None:
    async with make_store() as store:
        assert await record(store, inbound("m1"), "corr") is not None
    async with make_store() as store:
        assert await record(store, inbound("m1"), "corr-again") is None
        assert await record(store, inbound("m2"), "corr") is not None


async def test_duplicates_are_counted(store: BackendStore) -> None:
    entry_id = await record(store, inbound("m1"), "c")
    assert entry_id is not None
    assert await store.inbound.duplicates(entry_id) == 0
    await store.inbound.count_duplicate(inbound("m1"))
    await store.inbound.count_duplicate(inbound("m1"))
    assert await store.inbound.duplicates(entry_id) == 2


async def test_the_journal_keeps_the_whole_message(store: BackendStore) -> None:
    original = inbound("m1")
    entry_id = await record(store, original, "c")
    assert entry_id is not None
    entry = await journal_entry(store, "m1")
    assert entry is not None
    assert entry.id == entry_id
    assert entry.message == original
    assert entry.message.received_at.tzinfo is UTC
    assert entry.status is InboundStatus.ACCEPTED
    assert entry.key is None
    assert entry.thread_id is None
    assert await journal_entry(store, "m1", chat_id="c2") is None


async def test_update_changes_only_what_it_is_given(
    store: BackendStore, clock: ManualClock
) -> None:
    entry_id = await record(store, inbound("m1"), "c")
    assert entry_id is not None
    routed = key(topic_id="root")
    clock.advance(5)
    await store.inbound.update(entry_id, InboundStatus.RUNNING, key=routed, thread_id="t1")
    clock.advance(5)
    await store.inbound.update(entry_id, InboundStatus.HANDLED)
    entry = await journal_entry(store, "m1")
    assert entry is not None
    assert entry.status is InboundStatus.HANDLED
    assert entry.key == routed
    assert entry.thread_id == "t1"
    assert entry.reason is None
    assert entry.updated_at - entry.recorded_at == timedelta(seconds=10)
    await store.inbound.update(entry_id, InboundStatus.DROPPED, reason="not_allowed")
    entry = await journal_entry(store, "m1")
    assert entry is not None
    assert (entry.status, entry.reason) == (InboundStatus.DROPPED, "not_allowed")


async def test_a_finished_entry_is_never_reopened(store: BackendStore) -> None:
    """A late turn mark (a replica that lost the chat while its store was out of reach) must
    not make an answered message unfinished again: nobody would ever finish it."""
    entry_id = await record(store, inbound("m1"), "c")
    assert entry_id is not None
    await store.inbound.update(entry_id, InboundStatus.HANDLED, reason="answered")
    await store.inbound.update(entry_id, InboundStatus.RUNNING, reason="turn t-late")
    await store.inbound.update(entry_id, InboundStatus.ACCEPTED)
    entry = await journal_entry(store, "m1")
    assert entry is not None
    assert (entry.status, entry.reason) == (InboundStatus.HANDLED, "answered")
    assert await store.inbound.unfinished() == []


async def test_unfinished_entries_are_resumable_after_reopening(
    make_store: StoreFactory, clock: ManualClock
) -> None:
    async with make_store() as store:
        ids: list[int] = []
        for n in range(4):
            entry_id = await record(store, inbound(f"m{n}"), f"corr-{n}")
            assert entry_id is not None
            ids.append(entry_id)
            clock.advance(1)
        await store.inbound.update(ids[0], InboundStatus.HANDLED)
        await store.inbound.update(ids[1], InboundStatus.RUNNING, key=key(), thread_id="t1")
        await store.inbound.update(ids[3], InboundStatus.FAILED, reason="agent")
    async with make_store() as store:
        unfinished = await store.inbound.unfinished()
    assert [e.id for e in unfinished] == [ids[1], ids[2]]  # oldest first
    running, accepted = unfinished
    assert (running.status, running.key, running.thread_id) == (InboundStatus.RUNNING, key(), "t1")
    assert accepted.status is InboundStatus.ACCEPTED
    assert accepted.message == inbound("m2")
    assert accepted.correlation_id == "corr-2"


async def test_find_traces_a_message_id_across_chats(store: BackendStore) -> None:
    a = await record(store, inbound("m1", chat_id="c1"), "a")
    b = await record(store, inbound("m1", chat_id="c2"), "b")
    await record(store, inbound("m1", channel="slack"), "c")
    await record(store, inbound("m2"), "d")
    found = await store.inbound.find("telegram", "m1")
    assert [e.id for e in found] == [a, b]
    assert await store.inbound.find("telegram", "nope") == []


async def test_prune_forgets_old_finished_entries_only(
    store: BackendStore, clock: ManualClock
) -> None:
    old_done = await record(store, inbound("old-done"), "c")
    old_running = await record(store, inbound("old-running"), "c")
    old_accepted = await record(store, inbound("old-accepted"), "c")
    assert old_done is not None
    assert old_running is not None
    assert old_accepted is not None
    await store.inbound.update(old_done, InboundStatus.HANDLED)
    await store.inbound.update(old_running, InboundStatus.RUNNING)
    clock.advance(8 * 86400)
    new_done = await record(store, inbound("new-done"), "c")
    assert new_done is not None
    await store.inbound.update(new_done, InboundStatus.HANDLED)

    assert await store.inbound.prune(clock.now - timedelta(days=7)) == 1

    assert await journal_entry(store, "old-done") is None
    for kept in ("old-running", "old-accepted", "new-done"):
        assert await journal_entry(store, kept) is not None
    # Once pruned, the dedupe key is free again (the caller keeps >= 7 days).
    assert await record(store, inbound("old-done"), "c") is not None
