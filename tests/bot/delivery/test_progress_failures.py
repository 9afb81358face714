"""Progress calls fail like rows do (design §8): classified, counted, and a 429 on a streaming
edit slows its chat for every send; progress itself is dropped, never retried."""

from __future__ import annotations

import asyncio

import pytest

from bot.delivery.progress import ProgressStream
from bot.delivery.ratelimit import RateLimiter
from bot.delivery.replies import ReplyContext
from bot.errors import Forbidden, RateLimited, SendError, TransientSendError
from bot.messages import ChatType, Destination, SentRef, TextEdit
from bot.metrics import Counters
from bot.ports import ChannelCapabilities
from bot.records import OutboxItem
from tests.bot.delivery.outbox_calls import OutboxCalls
from tests.fakes.channel import FakeChannel
from tests.store.support import key

DESTINATION = Destination(channel="fake", chat_id="c1", chat_type=ChatType.DM)
CHAT = ("fake", "", "c1")
CTX = ReplyContext(
    key=key(channel="fake"), thread_id="t1", destination=DESTINATION, reply_to="m1",
    correlation_id="corr", turn_tag="placeholder",
)  # fmt: skip


async def _withdraw(item: OutboxItem) -> SentRef | None:
    return None


def _edits(channel: FakeChannel) -> list[str]:
    return [s.text for s in channel.sent if isinstance(s.delivery, TextEdit)]


async def _streaming(channel: FakeChannel, failure: SendError, limiter: RateLimiter) -> None:
    """Start a stream whose placeholder arrives, then fail its next edit with ``failure``."""
    placeholder_sent = asyncio.Event()

    async def send(item: OutboxItem) -> SentRef | None:
        placeholder_sent.set()
        return SentRef(message_ids=("b1",))

    stream = ProgressStream(
        channel, OutboxCalls(send, _withdraw), limiter, CTX, counters=Counters()
    )
    stream.start()
    stream.add_text("one")
    async with asyncio.timeout(5):
        await placeholder_sent.wait()
        channel.fail_next.append(failure)
        stream.add_text(" two")
        while channel.fail_next:  # noqa: ASYNC110 - the fake signals no failed call
            await asyncio.sleep(0.01)
    stream.add_text(" three")
    await asyncio.sleep(0.2)
    assert await stream.close() == "b1"  # the final still replaces the placeholder


async def test_a_429_on_a_streaming_edit_blocks_its_chat_as_a_rows_does() -> None:
    channel = FakeChannel()
    limiter = RateLimiter(lambda: 1000.0)  # a clock that stands still: the block never ends
    await _streaming(channel, RateLimited("slow down", retry_after=30.0), limiter)
    assert not limiter.try_acquire(CHAT)  # later edits are dropped ...
    assert limiter.reserve(CHAT, group=False) == pytest.approx(30.0)  # ... finals wait it out
    assert limiter.reserve(("fake", "", "other"), group=False) == 0.0
    assert _edits(channel) == []  # nothing was retried


async def test_a_forbidden_chat_gets_no_more_progress() -> None:
    channel = FakeChannel()
    await _streaming(channel, Forbidden("bot was kicked"), RateLimiter())
    assert _edits(channel) == []  # no edit after the refusal, though the text grew


async def test_a_transient_edit_failure_drops_only_that_edit() -> None:
    channel = FakeChannel()
    await _streaming(channel, TransientSendError("502"), RateLimiter())
    assert _edits(channel) == ["one two three ▍"]  # the next edit shows the latest text


async def test_typing_waits_out_a_429_like_any_progress() -> None:
    caps = ChannelCapabilities(text_limit=4000, typing=True, progress_interval_dm_s=0.0)
    blocked, free = FakeChannel(caps=caps), FakeChannel(caps=caps)
    held = RateLimiter(lambda: 1000.0)
    held.block(CHAT, 30.0)
    streams = [
        ProgressStream(blocked, OutboxCalls(_withdraw, _withdraw), held, CTX),
        ProgressStream(free, OutboxCalls(_withdraw, _withdraw), RateLimiter(), CTX),
    ]
    for stream in streams:
        stream.start()
    await asyncio.sleep(0.2)
    for stream in streams:
        assert await stream.close() is None
    assert (blocked.typing_count, free.typing_count) == (0, 1)
