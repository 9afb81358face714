"""The mutes table on both backends: a mute reads back, replaces the key's earlier one, ends
by itself at its time, is lifted, and is seen by a second store on the same data (the CLI
beside the daemon, another replica, the daemon after a restart)."""

from __future__ import annotations

from datetime import timedelta

from bot.messages import ConversationKey
from bot.ports.mutes import Mute
from bot.takeover.mutes import MuteBook
from tests.store.support import START, BackendStore, StoreFactory

TOPIC = ConversationKey(channel="slack", account_id="T1", chat_id="C1", topic_id="171.5")
CHAT = ConversationKey(channel="slack", account_id="T1", chat_id="C1")
MEMBER = ConversationKey(channel="telegram", chat_id="-100", user_id="42")


def muted(key: ConversationKey, minutes: int | None, *, by: str = "slack:U1") -> Mute:
    until = None if minutes is None else START + timedelta(minutes=minutes)
    return Mute(key=key, until=until, reason="/mute", muted_by=by, muted_at=START)


async def test_mutes_read_back_replace_expire_and_lift(store: BackendStore) -> None:
    table = store.mutes
    await table.put(muted(TOPIC, 30))
    await table.put(muted(CHAT, None))
    await table.put(muted(MEMBER, 5))
    assert await table.active(START) == [muted(CHAT, None), muted(TOPIC, 30), muted(MEMBER, 5)]
    later = START + timedelta(minutes=10)
    assert {m.key for m in await table.active(later)} == {CHAT, TOPIC}
    await table.put(muted(TOPIC, 60, by="slack:U2"))
    (topic,) = [m for m in await table.active(later) if m.key == TOPIC]
    assert (topic.until, topic.muted_by) == (START + timedelta(minutes=60), "slack:U2")
    assert await table.purge(later) == 1
    assert await table.lift(MEMBER) is None
    assert await table.lift(CHAT) == muted(CHAT, None)
    assert await table.lift(CHAT) is None
    assert [m.key for m in await table.active(later)] == [TOPIC]


async def test_a_mute_is_seen_by_a_second_store_on_the_same_data(
    store: BackendStore, make_store: StoreFactory
) -> None:
    await store.mutes.put(muted(TOPIC, None))
    async with make_store() as other:
        assert await other.mutes.active(START) == [muted(TOPIC, None)]
        await other.mutes.lift(TOPIC)
    assert await store.mutes.active(START) == []


async def test_each_replica_sees_the_others_mutes_once_its_snapshot_is_renewed(
    store: BackendStore, make_store: StoreFactory
) -> None:
    """``MuteBook`` on two stores of the same data (two replicas): a mute holds at once where
    it was made; elsewhere once that replica's snapshot is older than its time to live."""
    async with make_store() as other:
        here = MuteBook(store, clock=lambda: START)
        kept = MuteBook(other, clock=lambda: START, snapshot_ttl_s=3600)
        renewed = MuteBook(other, clock=lambda: START, snapshot_ttl_s=0)
        assert await kept.mute_over(TOPIC) is None
        assert await renewed.mute_over(TOPIC) is None
        await here.mute(CHAT, length=timedelta(minutes=5), reason="/mute", actor="slack:U1")
        assert (await here.mute_over(TOPIC), await kept.mute_over(TOPIC)) == (
            muted(CHAT, 5), None,
        )  # fmt: skip
        assert await renewed.mute_over(TOPIC) == muted(CHAT, 5)  # the chat's mute covers it
        assert await renewed.unmute(CHAT, "slack:U2") == muted(CHAT, 5)
        assert await MuteBook(store, clock=lambda: START).mute_over(TOPIC) is None
        (entry, *_) = await store.audit.recent()
    assert (entry.actor, entry.action, entry.detail) == ("slack:U2", "unmute", "slack C1")
