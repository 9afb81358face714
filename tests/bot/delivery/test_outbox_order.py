"""A chat's rows go out in order also across a retry: a newer row never overtakes an older
one whose retry time has just come but which is still in the store."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.backoff import Backoff
from bot.delivery.attempt import RetryPolicy
from bot.delivery.outbox import Outbox
from bot.delivery.ratelimit import RateLimiter
from bot.errors import TransientSendError
from bot.hub import ChannelHub, ChannelState
from bot.messages import ChatType, Destination, OutboundKind, OutboundText
from bot.metrics import Counters
from bot.records import OutboxItem
from store.sqlite import SqliteStore
from tests.fakes.channel import FakeChannel
from tests.store.support import START, ManualClock, key

DESTINATION = Destination(channel="fake", chat_id="c1", chat_type=ChatType.DM)


def _item(text: str) -> OutboxItem:
    return OutboxItem(
        idempotency_key=f"reply-{text}",
        delivery=OutboundText(destination=DESTINATION, text=text, kind=OutboundKind.FINAL),
        key=key(channel="fake"),
        thread_id="t1",
        correlation_id=f"corr-{text}",
    )


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
async def store(tmp_path: Path, clock: ManualClock) -> AsyncIterator[SqliteStore]:
    async with SqliteStore(tmp_path / "switchboard.db", clock=clock) as opened:
        yield opened


async def test_a_newer_row_waits_for_the_older_one_whose_retry_is_due(
    store: SqliteStore, clock: ManualClock
) -> None:
    channel = FakeChannel()
    hub = ChannelHub(store.settings)
    hub.add(channel)
    hub.set_state("fake", ChannelState.RUNNING)
    policy = RetryPolicy(clock=clock, backoff=Backoff(base_s=1.0, factor=1.0, cap_s=1.0))
    outbox = Outbox(store, hub, RateLimiter(), Counters(), policy)
    worker = asyncio.create_task(outbox.run(), name="outbox")
    try:
        channel.fail_next.append(TransientSendError("502 Bad Gateway"))
        await outbox.submit([_item("answer 5")])
        async with asyncio.timeout(5):
            await outbox.wait_idle()  # answer 5 failed and waits for its retry
        clock.advance(5)  # its retry time has come, before the worker's alarm rang
        await outbox.submit([_item("answer 6")])
        await channel.wait_text("answer 6")
        assert [sent.text for sent in channel.sent] == ["answer 5", "answer 6"]
    finally:
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)


async def test_a_reserved_row_holds_its_chat_until_recovery_releases_it(
    store: SqliteStore, clock: ManualClock
) -> None:
    """Crash recovery keeps an old row for itself (design §11): its chat sends nothing, a re-run
    sharing its key can neither take it back nor learn its message before recovery is done, and
    once recovery has resent it (as a stand-in, under the row's key) and released it, the
    chat's queue follows in order."""
    channel = FakeChannel()
    hub = ChannelHub(store.settings)
    hub.add(channel)
    hub.set_state("fake", ChannelState.RUNNING)
    outbox = Outbox(store, hub, RateLimiter(), Counters(), RetryPolicy(clock=clock))
    old = _item("left by the crash")
    (row,) = await store.outbox.enqueue_rows([old])
    outbox.reserve(row)
    worker = asyncio.create_task(outbox.run(), name="outbox")
    try:
        await outbox.submit([_item("answer 6")])
        async with asyncio.timeout(5):
            await outbox.wait_idle()  # nothing it may send: the chat waits for recovery
        assert channel.sent == []
        assert await outbox.withdraw(old) is None
        with pytest.raises(TimeoutError):  # it cannot answer while the row is reserved
            async with asyncio.timeout(0.2):
                await outbox.send_now(old)
        stand_in = OutboundText(destination=DESTINATION, text="stand-in", kind=OutboundKind.NOTICE)
        outcome = await outbox.resend(row, stand_in)
        outbox.release(row)
        assert await outbox.send_now(old) == outcome.sent  # released: it names the message
        await channel.wait_text("answer 6")
        assert [sent.text for sent in channel.sent] == ["stand-in", "answer 6"]
        first = channel.sent[0].delivery
        assert isinstance(first, OutboundText)
        assert first.dedupe_key == old.idempotency_key
        assert outcome.sent is not None
        stored = await store.outbox.get(row.id)
        assert stored is not None
        assert stored.sent_message_ids == outcome.sent.message_ids
    finally:
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)


async def test_a_paused_chat_sends_nothing_until_the_takeover_is_done(
    store: SqliteStore, clock: ManualClock
) -> None:
    """A replica taking a chat over from one that is gone (design §11 "replicas") keeps the
    chat's rows back while it deals with what the other left; then they go, in order."""
    channel = FakeChannel()
    hub = ChannelHub(store.settings)
    hub.add(channel)
    hub.set_state("fake", ChannelState.RUNNING)
    outbox = Outbox(store, hub, RateLimiter(), Counters(), RetryPolicy(clock=clock))
    await store.outbox.enqueue_rows([_item("left by the other replica")])
    worker = asyncio.create_task(outbox.run(), name="outbox")
    chat = ("fake", "", "c1")
    try:
        with outbox.paused([chat]):
            with outbox.paused([chat]):  # a sweep and an intake may overlap
                await outbox.submit([_item("answer 6")])
            async with asyncio.timeout(5):
                await outbox.wait_idle()
            assert channel.sent == []
        await channel.wait_text("answer 6")
        assert [sent.text for sent in channel.sent] == ["left by the other replica", "answer 6"]
    finally:
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)
