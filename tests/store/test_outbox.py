"""The outbox: idempotent enqueue, due order, retry / dead / revive, and restart resumption."""

from __future__ import annotations

import json
from datetime import UTC, timedelta

import pytest

from bot.messages import (
    Button,
    Delivery,
    OutboundFile,
    OutboundKind,
    OutboundText,
    Reaction,
    ReactionMark,
    RenderMode,
    TextEdit,
)
from bot.records import InboundStatus, OutboxState
from store.codec import decode_delivery, encode_delivery
from tests.store.support import (
    BackendStore,
    ManualClock,
    StoreFactory,
    destination,
    enqueue,
    inbound,
    item,
    journal_entry,
    key,
    record,
)

DELIVERIES: list[Delivery] = [
    OutboundText(
        destination=destination(topic_id="root"),
        text="**Pick one**",
        kind=OutboundKind.FINAL,
        reply_to="m1",
        buttons=(Button(label="Yes", payload="clar:1:0"), Button(label="No", payload="clar:1:1")),
        render=RenderMode.PLAIN,
    ),
    TextEdit(
        destination=destination(),
        message_id="sent-1",
        text="done — ✓",
        kind=OutboundKind.PROGRESS,
        buttons=(Button(label="Stop", payload="stop"),),
    ),
    OutboundFile(
        destination=destination(),
        path="/var/lib/switchboard/threads/t1/outputs/report.pdf",
        name="report.pdf",
        size=12345,
        is_image=False,
        reply_to="m1",
        caption="Your report",
    ),
    ReactionMark(destination=destination(), message_id="m1", reaction=Reaction.DONE),
]
PRIVATE_NOTICE = OutboundText(
    destination=destination(),
    text="Only the asker may decide.",
    kind=OutboundKind.NOTICE,
    private_to="u2",
)


@pytest.mark.parametrize("delivery", DELIVERIES, ids=lambda d: type(d).__name__)
async def test_every_delivery_type_round_trips(store: BackendStore, delivery: Delivery) -> None:
    original = item("k1", delivery, conversation=key(topic_id="root", user_id="u1"))
    [row_id] = await enqueue(store, [original])
    row = await store.outbox.get(row_id)
    assert row is not None
    assert row.item == original
    assert type(row.item.delivery) is type(delivery)


@pytest.mark.parametrize("delivery", DELIVERIES[::2], ids=lambda d: type(d).__name__)
def test_a_payload_written_before_dedupe_keys_existed_still_loads(delivery: Delivery) -> None:
    """``dedupe_key`` is set at attempt time, so stored payloads hold its default; rows from
    before the field existed load with that default."""
    op, payload = encode_delivery(delivery)
    older = json.loads(payload)
    assert older.pop("dedupe_key") == ""
    assert decode_delivery(op, json.dumps(older)) == delivery


async def test_a_private_message_keeps_whom_it_is_for(store: BackendStore) -> None:
    [row_id] = await enqueue(store, [item("k1", PRIVATE_NOTICE)])
    row = await store.outbox.get(row_id)
    assert row is not None
    assert row.item.delivery == PRIVATE_NOTICE


def test_a_payload_written_before_private_messages_existed_loads_as_a_public_one() -> None:
    op, payload = encode_delivery(PRIVATE_NOTICE)
    older = json.loads(payload)
    assert older.pop("private_to") == "u2"
    decoded = decode_delivery(op, json.dumps(older))
    assert isinstance(decoded, OutboundText)
    assert decoded.private_to is None


async def test_a_new_row_is_pending_and_due_now(store: BackendStore, clock: ManualClock) -> None:
    [row_id] = await enqueue(store, [item("k1")])
    row = await store.outbox.get(row_id)
    assert row is not None
    assert row.state is OutboxState.PENDING
    assert row.attempts == 0
    assert row.last_error is None
    assert row.sent_message_ids == ()
    assert row.next_attempt_at == row.created_at == clock.now
    assert row.next_attempt_at.tzinfo is UTC
    assert await store.outbox.get(row_id + 1) is None


async def test_enqueue_is_idempotent_per_key(store: BackendStore) -> None:
    first = await enqueue(store, [item("k1"), item("k2")])
    again = await enqueue(store, [item("k2"), item("k3"), item("k1")])
    assert again == [first[1], again[1], first[0]]
    assert len(set(first + again)) == 3
    twice_in_one_batch = await enqueue(store, [item("k4"), item("k4")])
    assert twice_in_one_batch[0] == twice_in_one_batch[1]
    assert (await store.outbox.counts())[OutboxState.PENDING] == 4


async def test_due_returns_pending_rows_whose_time_has_come_in_order(
    store: BackendStore, clock: ManualClock
) -> None:
    ids = await enqueue(store, [item(f"k{n}") for n in range(5)])
    now = clock.advance(1)
    later = now + timedelta(seconds=30)
    await store.outbox.mark_retry(ids[1], "429", later)
    await store.outbox.mark_sent(ids[2], ("s1",))
    await store.outbox.mark_dead(ids[3], "forbidden")

    assert [r.id for r in await store.outbox.due(now)] == [ids[0], ids[4]]
    assert [r.id for r in await store.outbox.due(later - timedelta(microseconds=1))] == [
        ids[0],
        ids[4],
    ]
    assert [r.id for r in await store.outbox.due(later)] == [ids[0], ids[1], ids[4]]
    assert [r.id for r in await store.outbox.due(later, limit=2)] == [ids[0], ids[1]]


async def test_next_due_at_is_the_earliest_pending_attempt(
    store: BackendStore, clock: ManualClock
) -> None:
    assert await store.outbox.next_due_at() is None
    start = clock.now
    a, b = await enqueue(store, [item("a"), item("b")])
    assert await store.outbox.next_due_at() == start
    await store.outbox.mark_retry(a, "x", clock.advance(20))
    await store.outbox.mark_sent(b, ("s",))
    assert await store.outbox.next_due_at() == clock.now


async def test_retry_sent_and_dead_record_each_attempt(
    store: BackendStore, clock: ManualClock
) -> None:
    a, b = await enqueue(store, [item("a"), item("b")])
    await store.outbox.mark_retry(a, "timeout", clock.advance(1))
    await store.outbox.mark_retry(a, "429", clock.advance(2))
    await store.outbox.mark_sent(a, ("s1", "s2"))
    sent = await store.outbox.get(a)
    assert sent is not None
    assert (sent.state, sent.attempts, sent.sent_message_ids) == (
        OutboxState.SENT,
        3,
        ("s1", "s2"),
    )
    assert sent.last_error == "429"
    assert sent.updated_at == clock.now

    await store.outbox.mark_retry(b, "500", clock.advance(1))
    await store.outbox.mark_dead(b, "gave up: 500")
    dead = await store.outbox.get(b)
    assert dead is not None
    assert (dead.state, dead.attempts, dead.last_error) == (OutboxState.DEAD, 2, "gave up: 500")


async def test_revive_moves_dead_rows_back_to_pending_due_now(
    store: BackendStore, clock: ManualClock
) -> None:
    a, b, c = await enqueue(store, [item("a"), item("b"), item("c")])
    for row_id in (a, b):
        await store.outbox.mark_retry(row_id, "500", clock.advance(100))
        await store.outbox.mark_dead(row_id, "500")
    await store.outbox.mark_sent(c, ("s",))
    clock.advance(5)

    assert await store.outbox.revive([a, c]) == 1  # c was not dead
    revived = await store.outbox.get(a)
    assert revived is not None
    assert (revived.state, revived.attempts) == (OutboxState.PENDING, 0)
    assert revived.next_attempt_at == clock.now
    assert [r.id for r in await store.outbox.due(clock.now)] == [a]

    assert await store.outbox.revive() == 1
    assert [r.id for r in await store.outbox.due(clock.now)] == [a, b]


async def test_counts_listing_and_purge(store: BackendStore) -> None:
    assert await store.outbox.counts() == dict.fromkeys(OutboxState, 0)
    ids = await enqueue(store, [item(f"k{n}") for n in range(5)])
    await store.outbox.mark_sent(ids[0], ("s",))
    await store.outbox.mark_dead(ids[1], "x")
    await store.outbox.mark_dead(ids[2], "y")
    assert await store.outbox.counts() == {
        OutboxState.PENDING: 2,
        OutboxState.SENT: 1,
        OutboxState.DEAD: 2,
    }
    assert [r.id for r in await store.outbox.listing(OutboxState.DEAD)] == [ids[2], ids[1]]
    assert [r.id for r in await store.outbox.listing(limit=2)] == [ids[4], ids[3]]

    assert await store.outbox.purge(OutboxState.DEAD) == 2
    assert await store.outbox.listing(OutboxState.DEAD) == []
    assert (await store.outbox.counts())[OutboxState.DEAD] == 0
    assert (await store.outbox.counts())[OutboxState.PENDING] == 2


async def test_for_correlation_lists_a_turns_deliveries_in_order(store: BackendStore) -> None:
    ids = await enqueue(store, [item("a", correlation_id="c1"), item("b", correlation_id="c2")])
    more = await enqueue(store, [item("c", correlation_id="c1")])
    rows = await store.outbox.for_correlation("c1")
    assert [r.id for r in rows] == [ids[0], more[0]]
    assert await store.outbox.for_correlation("none") == []


async def test_pending_rows_are_resumed_after_the_store_is_reopened(
    make_store: StoreFactory, clock: ManualClock
) -> None:
    async with make_store() as store:
        ids = await enqueue(store, [item(f"k{n}", DELIVERIES[n]) for n in range(4)])
        await store.outbox.mark_sent(ids[0], ("s",))
        await store.outbox.mark_retry(ids[1], "timeout", clock.advance(10))
    clock.advance(10)
    async with make_store() as store:
        due = await store.outbox.due(clock.now)
        assert [r.id for r in due] == ids[1:]
        assert [r.item.delivery for r in due] == DELIVERIES[1:]
        assert due[0].attempts == 1
        assert due[0].last_error == "timeout"
        # the idempotency keys are durable too
        assert await enqueue(store, [item("k0"), item("k3")]) == [ids[0], ids[3]]


async def test_recording_a_reply_finishes_the_messages_it_answers(store: BackendStore) -> None:
    first = await record(store, inbound("m1"), "corr-1")
    second = await record(store, inbound("m2"), "corr-2")
    assert first is not None
    assert second is not None
    await store.outbox.enqueue_rows([item("reply")], finishes=[first, second])
    for message_id in ("m1", "m2"):
        entry = await journal_entry(store, message_id)
        assert entry is not None
        assert entry.status is InboundStatus.HANDLED
    assert await store.inbound.unfinished() == []


async def test_a_reply_recorded_before_still_finishes_a_resumed_turns_messages(
    store: BackendStore,
) -> None:
    """The reply row exists from before a restart (same idempotency key), so no insert runs;
    the messages are finished anyway, in one transaction for a multi-part reply."""
    await store.outbox.enqueue_rows([item("part-1"), item("part-2")])
    entry = await record(store, inbound("m1"), "corr-1")
    assert entry is not None
    await store.outbox.enqueue_rows([item("part-1"), item("part-2")], finishes=[entry])
    found = await journal_entry(store, "m1")
    assert found is not None
    assert found.status is InboundStatus.HANDLED
    single = await record(store, inbound("m2"), "corr-2")
    assert single is not None
    await store.outbox.enqueue_rows([item("part-1")], finishes=[single])
    found = await journal_entry(store, "m2")
    assert found is not None
    assert found.status is InboundStatus.HANDLED
