"""A placeholder that has not arrived when the turn ends is taken back, never left behind."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.delivery.attempt import RetryPolicy
from bot.delivery.outbox import Outbox
from bot.delivery.progress import ProgressStream
from bot.delivery.ratelimit import RateLimiter
from bot.delivery.replies import ReplyContext
from bot.errors import TransientSendError
from bot.hub import ChannelHub, ChannelState
from bot.messages import ChatType, Destination, OutboundKind, OutboundText, SentRef
from bot.metrics import Counters
from bot.records import OutboxItem, OutboxState
from store.sqlite import SqliteStore
from tests.bot.delivery.outbox_calls import OutboxCalls
from tests.fakes.channel import FakeChannel
from tests.store.support import key

DESTINATION = Destination(channel="fake", chat_id="c1", chat_type=ChatType.DM)
CTX = ReplyContext(
    key=key(channel="fake"), thread_id="t1", destination=DESTINATION, reply_to="m1",
    correlation_id="corr", turn_tag="placeholder",
)  # fmt: skip


async def test_close_takes_back_a_placeholder_stuck_in_the_outbox() -> None:
    stuck = asyncio.Event()
    withdrawn: list[str] = []

    async def send(item: OutboxItem) -> SentRef | None:
        stuck.set()
        await asyncio.Event().wait()  # the chat is held: it does not arrive
        return None

    async def withdraw(item: OutboxItem) -> SentRef | None:
        withdrawn.append(item.idempotency_key)
        return None

    stream = ProgressStream(FakeChannel(), OutboxCalls(send, withdraw), RateLimiter(), CTX)
    stream.start()
    stream.add_text("thinking about it")
    async with asyncio.timeout(5):
        await stuck.wait()
    async with asyncio.timeout(2):  # not the placeholder's own 10 s wait
        assert await stream.close() is None  # the final goes as a new message
    assert withdrawn == ["corr/placeholder/0"]


async def test_close_finishes_a_placeholder_that_was_sent_meanwhile() -> None:
    stuck = asyncio.Event()

    async def send(item: OutboxItem) -> SentRef | None:
        stuck.set()
        await asyncio.Event().wait()
        return None

    async def withdraw(item: OutboxItem) -> SentRef | None:
        return SentRef(message_ids=("b7",))  # it went out just before the final

    stream = ProgressStream(FakeChannel(), OutboxCalls(send, withdraw), RateLimiter(), CTX)
    stream.start()
    stream.add_text("thinking")
    async with asyncio.timeout(5):
        await stuck.wait()
    assert await stream.close() == "b7"  # the final edits it


@pytest.fixture
async def outbox(tmp_path: Path) -> AsyncIterator[tuple[Outbox, FakeChannel]]:
    async with SqliteStore.from_state_dir(tmp_path) as store:
        channel = FakeChannel()
        hub = ChannelHub(store.settings)
        hub.add(channel)
        hub.set_state("fake", ChannelState.RUNNING)
        box = Outbox(store, hub, RateLimiter(), Counters(), RetryPolicy())
        worker = asyncio.create_task(box.run(), name="outbox")
        try:
            yield box, channel
        finally:
            worker.cancel()
            await asyncio.gather(worker, return_exceptions=True)


def _text(ctx: ReplyContext, text: str, kind: OutboundKind) -> OutboxItem:
    return ctx.item(0, OutboundText(destination=DESTINATION, text=text, kind=kind))


async def test_withdraw_keeps_a_waiting_row_from_ever_being_sent(
    outbox: tuple[Outbox, FakeChannel], tmp_path: Path
) -> None:
    box, channel = outbox
    channel.fail_next.append(TransientSendError("502"))
    await box.submit([_text(CTX.tagged("earlier"), "an earlier reply", OutboundKind.FINAL)])
    async with asyncio.timeout(5):
        await box.wait_idle()  # it failed: the chat is held until its retry
    placeholder = _text(CTX, "thinking ▍", OutboundKind.PROGRESS)
    await box.submit([placeholder])
    assert await box.withdraw(placeholder) is None
    await channel.wait_text("an earlier reply", within=10)  # the retry went out …
    async with asyncio.timeout(5):
        await box.wait_idle()
    assert [sent.text for sent in channel.sent] == ["an earlier reply"]  # … the placeholder not
    async with SqliteStore.from_state_dir(tmp_path) as store:
        states = {row.item.idempotency_key: row.state for row in await store.outbox.listing()}
    assert states["corr/placeholder/0"] is OutboxState.DEAD


async def test_withdraw_of_a_sent_row_names_its_message(
    outbox: tuple[Outbox, FakeChannel],
) -> None:
    box, _channel = outbox
    placeholder = _text(CTX, "thinking ▍", OutboundKind.PROGRESS)
    sent = await box.send_now(placeholder)
    assert sent is not None
    assert await box.withdraw(placeholder) == sent


async def test_a_placeholder_send_that_crashes_is_logged_not_swallowed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    started = asyncio.Event()

    async def send(item: OutboxItem) -> SentRef | None:
        started.set()
        raise RuntimeError("the store went away")

    async def withdraw(item: OutboxItem) -> SentRef | None:
        return None

    stream = ProgressStream(FakeChannel(), OutboxCalls(send, withdraw), RateLimiter(), CTX)
    stream.start()
    stream.add_text("thinking")
    async with asyncio.timeout(5):
        await started.wait()
    with caplog.at_level(logging.ERROR, logger="bot.delivery.progress"):
        assert await stream.close() is None
    (record,) = [r for r in caplog.records if "progress task" in r.getMessage()]
    assert record.exc_info is not None
    assert "the store went away" in str(record.exc_info[1])
