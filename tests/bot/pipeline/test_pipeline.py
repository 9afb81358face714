"""The one pipeline end to end: intake, dedupe, routing, lanes, delivery (design §4, §5)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.messages import OutboundKind, OutboundText, TextEdit
from bot.ports import Admission
from bot.records import InboundStatus
from tests.bot.harness import make_settings, routed, running
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import PLAIN_CAPS, FakeChannel, dm, group


async def test_dm_gets_streamed_then_final_answer(tmp_path: Path) -> None:
    channel, agent = FakeChannel(), FakeAgent()
    release = agent.hold("slow")
    async with running(make_settings(tmp_path), [channel], agent):
        assert await channel.inject(dm("slow hello", message_id="1")) is Admission.ACCEPTED
        placeholder = await channel.wait_for(
            lambda s: isinstance(s.delivery, OutboundText) and "working" in s.text
        )
        release.set()
        final = await channel.wait_text("echo: slow hello")
    # The placeholder was sent as progress, then edited in place with the final text.
    assert isinstance(placeholder.delivery, OutboundText)
    assert placeholder.delivery.kind is OutboundKind.PROGRESS
    assert placeholder.delivery.reply_to == "1"
    assert isinstance(final.delivery, TextEdit)
    assert final.delivery.message_id == placeholder.message_id
    assert final.delivery.kind is OutboundKind.FINAL


async def test_fast_answer_without_placeholder_is_one_message(tmp_path: Path) -> None:
    channel, agent = FakeChannel(caps=PLAIN_CAPS), FakeAgent()
    async with running(make_settings(tmp_path), [channel], agent):
        await channel.inject(dm("hello", message_id="1"))
        final = await channel.wait_text("echo: hello")
    assert isinstance(final.delivery, OutboundText)
    assert channel.texts() == ["echo: hello"]


async def test_redelivered_message_runs_once_also_after_restart(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    channel, agent = FakeChannel(), FakeAgent()
    async with running(settings, [channel], agent):
        assert await channel.inject(dm("hi", message_id="42")) is Admission.ACCEPTED
        assert await channel.inject(dm("hi", message_id="42")) is Admission.DUPLICATE
        await channel.wait_text("echo: hi")
    channel2 = FakeChannel()
    async with running(settings, [channel2], agent):
        assert await channel2.inject(dm("hi", message_id="42")) is Admission.DUPLICATE
    assert len(agent.runs) == 1
    assert channel2.sent == []


async def test_two_simultaneous_first_messages_share_one_thread(tmp_path: Path) -> None:
    channel, agent = FakeChannel(), FakeAgent()
    async with running(make_settings(tmp_path), [channel], agent) as daemon:
        results = await asyncio.gather(
            channel.inject(dm("one", message_id="1")), channel.inject(dm("two", message_id="2"))
        )
        assert list(results) == [Admission.ACCEPTED, Admission.ACCEPTED]
        await channel.wait_text("two")
        await daemon.kernel.conversations.lanes.wait_idle()
    assert agent.threads_created == 1
    assert {run.thread_id for run in agent.runs} == {"t1"}


async def test_unregistered_slash_text_is_chat_for_the_agent(tmp_path: Path) -> None:
    channel, agent = FakeChannel(), FakeAgent()
    async with running(make_settings(tmp_path), [channel], agent):
        await channel.inject(dm("/tmp/x.csv please", message_id="1"))
        await channel.wait_text("echo: /tmp/x.csv please")
        await channel.inject(dm("/unregistered thing", message_id="2"))
        await channel.wait_text("echo: /unregistered thing")
    texts = [run.turn.text for run in agent.runs]
    assert texts == ["/tmp/x.csv please", "/unregistered thing"]


async def test_reply_to_bot_message_continues_its_thread(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, conversations={"group_scope": "topic"})
    channel, agent = FakeChannel(), FakeAgent()
    async with running(settings, [channel], agent) as daemon:
        await channel.inject(group("start", message_id="100", mentions_bot=True))
        answer = await channel.wait_text("echo: start")
        await daemon.kernel.conversations.lanes.wait_idle()
        bot_message = answer.message_id or channel.sent[0].message_id
        assert bot_message is not None
        # No mention: a plain reply to the bot's message is addressed and continues the thread.
        await channel.inject(group("more", message_id="101", reply_to_message_id=bot_message))
        await channel.wait_text("echo: more")
        # An unaddressed top-level message is dropped.
        await channel.inject(group("chatter", message_id="102"))
        await routed(daemon.kernel, 3)
        (entry,) = await daemon.kernel.store.inbound.find("fake", "102")
    assert entry.status is InboundStatus.DROPPED
    assert entry.reason == "not_addressed"
    assert [run.thread_id for run in agent.runs] == ["t1", "t1"]


async def test_text_streamed_before_progress_begins_skips_the_typing_call(tmp_path: Path) -> None:
    channel, agent = FakeChannel(), FakeAgent()
    release = agent.hold("slow")
    async with running(make_settings(tmp_path), [channel], agent):
        await channel.inject(dm("slow hello", message_id="1"))
        await channel.wait_for(
            lambda s: isinstance(s.delivery, OutboundText) and "working" in s.text
        )
        release.set()
        await channel.wait_text("echo: slow hello")
    assert channel.typing_count == 0
