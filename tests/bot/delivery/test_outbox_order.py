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
