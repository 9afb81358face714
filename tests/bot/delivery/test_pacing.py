"""Pacing through the outbox (design §8): progress never holds a final back, and a placeholder
for a chat that must wait is dropped at once instead of waited for. Decisions are read from the
limiter (an injected clock that never moves), not from wall time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from typing_extensions import override

from bot.delivery.attempt import RetryPolicy
from bot.delivery.outbox import Outbox
from bot.delivery.ratelimit import DestinationKey, RateLimiter
from bot.hub import ChannelHub, ChannelState
from bot.messages import ChatType, Destination, OutboundKind, OutboundText
from bot.metrics import Counters
from bot.records import OutboxItem, OutboxState
from store.sqlite import SqliteStore
from tests.fakes.channel import FakeChannel
from tests.store.support import START, ManualClock, key

GROUP = Destination(channel="fake", chat_id="-5", chat_type=ChatType.GROUP)
CHAT: DestinationKey = ("fake", "", "-5")


class Recording(RateLimiter):
    """The real limiter on a clock that stands still, noting the wait it asked of each send."""

    def __init__(self) -> None:
        super().__init__(lambda: 1000.0)
        self.delays: list[float] = []

    @override
    def reserve(self, key: DestinationKey, *, group: bool, new_message: bool = True) -> float:
        delay = super().reserve(key, group=group, new_message=new_message)
        self.delays.append(delay)
        return delay


def _item(text: str, kind: OutboundKind) -> OutboxItem:
    return OutboxItem(
        idempotency_key=f"reply-{text}",
        delivery=OutboundText(destination=GROUP, text=text, kind=kind),
        key=key(channel="fake", chat_id="-5"),
        thread_id="t1",
        correlation_id=f"corr-{text}",
    )


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    async with SqliteStore(tmp_path / "switchboard.db", clock=ManualClock(START)) as opened:
        yield opened


@pytest.fixture
async def running(store: SqliteStore) -> AsyncIterator[tuple[Outbox, FakeChannel, Recording]]:
    channel = FakeChannel()
    hub = ChannelHub(store.settings)
    hub.add(channel)
    hub.set_state("fake", ChannelState.RUNNING)
    limiter = Recording()
    limiter.configure("fake", per_chat_interval_s=1.0, global_rate_per_s=30.0)
    outbox = Outbox(store, hub, limiter, Counters(), RetryPolicy(clock=ManualClock(START)))
    worker = asyncio.create_task(outbox.run(), name="outbox")
    try:
        yield outbox, channel, limiter
    finally:
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)


async def test_the_final_after_a_placeholder_goes_at_once(
    running: tuple[Outbox, FakeChannel, Recording],
) -> None:
    outbox, channel, limiter = running
    async with asyncio.timeout(5):
        assert await outbox.send_now(_item("thinking", OutboundKind.PROGRESS)) is not None
        await outbox.submit([_item("answer", OutboundKind.FINAL)])
        await channel.wait_text("answer")
    assert limiter.delays == [0.0]  # the final asked no wait; the placeholder reserved nothing
    assert [sent.text for sent in channel.sent] == ["thinking", "answer"]


async def test_a_placeholder_for_a_chat_held_by_a_429_is_dropped_not_waited_for(
    running: tuple[Outbox, FakeChannel, Recording], store: SqliteStore
) -> None:
    outbox, channel, limiter = running
    limiter.block(CHAT, 30.0)
    async with asyncio.timeout(5):
        assert await outbox.send_now(_item("thinking", OutboundKind.PROGRESS)) is None
    assert channel.sent == []
    (row,) = await store.outbox.listing()
    assert row.state is OutboxState.DEAD
    assert limiter.delays == []  # nothing queued behind the 429 for it
