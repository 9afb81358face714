"""Conversation keys to threads, and links from sent messages back to threads."""

from __future__ import annotations

import asyncio
from datetime import UTC

from bot.records import InboundStatus, MessageLink
from tests.store.support import (
    BackendStore,
    ManualClock,
    StoreFactory,
    destination,
    inbound,
    key,
    link_sent,
    record,
)


async def test_bind_creates_once_and_then_returns_the_active_thread(
    store: BackendStore, clock: ManualClock
) -> None:
    assert await store.conversations.active(key()) is None
    first = await store.conversations.bind(key(), "t1")
    clock.advance(1)
    second = await store.conversations.bind(key(), "t2")
    assert first.thread_id == second.thread_id == "t1"
    assert first.key == key()
    assert first.ended_at is None
    assert first.created_at.tzinfo is UTC
    assert await store.conversations.active(key()) == first


async def test_concurrent_binds_for_a_new_key_yield_exactly_one_thread(
    store: BackendStore,
) -> None:
    results = await asyncio.gather(
        *(store.conversations.bind(key(), f"thread-{n}") for n in range(25))
    )
    assert len({c.thread_id for c in results}) == 1
    assert await store.conversations.count() == 1


async def test_rotate_keeps_history_and_the_topic_stays_known(
    store: BackendStore, clock: ManualClock
) -> None:
    topic = key(topic_id="root-1")
    assert not await store.conversations.topic_known(topic)
    await store.conversations.bind(topic, "old")
    clock.advance(60)
    rotated = await store.conversations.rotate(topic, "new")
    assert rotated.thread_id == "new"
    assert rotated.ended_at is None
    active = await store.conversations.active(topic)
    assert active is not None
    assert active.thread_id == "new"
    assert await store.conversations.count() == 1
    assert await store.conversations.topic_known(topic)
    # bind after rotate keeps the new thread
    assert (await store.conversations.bind(topic, "other")).thread_id == "new"


async def test_rotate_of_an_unknown_key_starts_its_first_thread(store: BackendStore) -> None:
    rotated = await store.conversations.rotate(key(), "t1")
    assert rotated.thread_id == "t1"
    assert await store.conversations.count() == 1


async def test_topic_known_after_reopening(make_store: StoreFactory) -> None:
    topic = key(topic_id="root-1")
    async with make_store() as store:
        await store.conversations.bind(topic, "t1")
        await store.conversations.rotate(topic, "t2")
    async with make_store() as store:
        assert await store.conversations.topic_known(topic)
        active = await store.conversations.active(topic)
        assert active is not None
        assert active.thread_id == "t2"


async def test_absent_topic_and_user_are_distinct_from_present_ones(store: BackendStore) -> None:
    variants = [
        key(),
        key(topic_id="x"),
        key(user_id="u1"),
        key(topic_id="x", user_id="u1"),
        key(account_id="bot2"),
    ]
    for n, variant in enumerate(variants):
        await store.conversations.bind(variant, f"t{n}")
    assert await store.conversations.count() == len(variants)
    for n, variant in enumerate(variants):
        active = await store.conversations.active(variant)
        assert active is not None
        assert active.thread_id == f"t{n}"
        assert active.key == variant  # None comes back as None, not ''
    assert not await store.conversations.topic_known(key(topic_id="y"))


async def test_recent_lists_active_conversations_most_recently_used_first(
    store: BackendStore, clock: ManualClock
) -> None:
    await store.conversations.bind(key("a"), "ta")
    clock.advance(1)
    await store.conversations.bind(key("b"), "tb")
    clock.advance(1)
    await store.conversations.bind(key("s", channel="slack"), "ts")
    clock.advance(1)
    entry = await record(store, inbound("m1"), "corr-1")
    assert entry is not None
    await store.inbound.update(entry, InboundStatus.RUNNING, thread_id="ta")  # a turn on "ta"
    clock.advance(1)
    await store.conversations.rotate(key("b"), "tb2")

    recent = await store.conversations.recent()
    assert [c.thread_id for c in recent] == ["tb2", "ta", "ts"]
    touched = recent[1]
    assert touched.updated_at > touched.created_at
    assert [c.thread_id for c in await store.conversations.recent(limit=1)] == ["tb2"]
    slack = await store.conversations.recent(channel="slack")
    assert [c.thread_id for c in slack] == ["ts"]
    assert await store.conversations.count() == 3


async def test_links_map_sent_messages_to_their_thread(store: BackendStore) -> None:
    link = MessageLink(key=key(topic_id="root"), thread_id="t1")
    await link_sent(store, destination(topic_id="root"), "sent-1", link)
    assert await store.links.lookup("telegram", "", "c1", "sent-1") == link
    assert await store.links.lookup("telegram", "", "c2", "sent-1") is None
    assert await store.links.lookup("telegram", "", "c1", "sent-2") is None

    plain = MessageLink(key=key(), thread_id="t2")
    await link_sent(store, destination(), "sent-2", plain)
    found = await store.links.lookup("telegram", "", "c1", "sent-2")
    assert found == plain
    assert plain.key.topic_id is None


async def test_adding_a_link_twice_keeps_the_latest(store: BackendStore) -> None:
    await link_sent(store, destination(), "sent-1", MessageLink(key=key(), thread_id="t1"))
    await link_sent(store, destination(), "sent-1", MessageLink(key=key(), thread_id="t2"))
    found = await store.links.lookup("telegram", "", "c1", "sent-1")
    assert found is not None
    assert found.thread_id == "t2"


async def test_current_is_remembered_and_follows_bind_and_rotate(
    make_store: StoreFactory,
) -> None:
    async with make_store(other_writers_check_s=3600) as store:
        assert await store.conversations.current(key("a")) is None
        await store.conversations.bind(key("a"), "t1")
        assert (await store.conversations.current(key("a"))).thread_id == "t1"  # type: ignore[union-attr]
        await store.conversations.rotate(key("a"), "t2")
        current = await store.conversations.current(key("a"))
        assert current is not None
        assert current.thread_id == "t2"
        racing = await asyncio.gather(
            store.conversations.current(key("b")), store.conversations.bind(key("b"), "tb")
        )
        assert racing[1].thread_id == "tb"
        assert (await store.conversations.current(key("b"))).thread_id == "tb"  # type: ignore[union-attr]
