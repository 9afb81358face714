"""Per-conversation lanes: busy policies, merging, no head-of-line blocking, /stop (design §5)."""

from __future__ import annotations

from pathlib import Path

from bot.records import InboundStatus
from tests.bot.harness import inbound_outcomes, make_settings, routed, running
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import PLAIN_CAPS, FakeChannel, dm, queued_reaction_on


async def test_queue_policy_merges_waiting_messages_into_one_turn(tmp_path: Path) -> None:
    channel, agent = FakeChannel(), FakeAgent()
    release = agent.hold("slow")
    async with running(make_settings(tmp_path), [channel], agent):
        await channel.inject(dm("slow first", message_id="1"))
        await agent.wait_runs(1)
        await channel.inject(dm("second", message_id="2"))
        await channel.inject(dm("third", message_id="3"))
        for message_id in ("2", "3"):
            await channel.wait_for(queued_reaction_on(message_id))
        release.set()
        await channel.wait_text("echo: second\n\nthird")
    assert [run.turn.text for run in agent.runs] == ["slow first", "second\n\nthird"]


async def test_queue_without_reactions_sends_a_queued_notice(tmp_path: Path) -> None:
    channel, agent = FakeChannel(caps=PLAIN_CAPS), FakeAgent()
    release = agent.hold("slow")
    async with running(make_settings(tmp_path), [channel], agent):
        await channel.inject(dm("slow first", message_id="1"))
        await agent.wait_runs(1)
        await channel.inject(dm("second", message_id="2"))
        await channel.wait_text("Queued")
        release.set()
        await channel.wait_text("echo: second")


async def test_interrupt_policy_cancels_the_running_turn(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, conversations={"busy_policy": "interrupt"})
    channel, agent = FakeChannel(), FakeAgent()
    agent.hold("slow")
    async with running(settings, [channel], agent) as daemon:
        await channel.inject(dm("slow first", message_id="1"))
        await agent.wait_runs(1)
        await channel.inject(dm("second", message_id="2"))
        await channel.wait_text("Interrupted")
        await channel.wait_text("echo: second")
        (first,) = await daemon.kernel.store.inbound.find("fake", "1")
    assert first.status is InboundStatus.HANDLED
    assert first.reason == "interrupted"
    assert [run.turn.text for run in agent.runs] == ["slow first", "second"]


async def test_reject_policy_answers_busy(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, conversations={"busy_policy": "reject"})
    channel, agent = FakeChannel(), FakeAgent()
    release = agent.hold("slow")
    async with running(settings, [channel], agent) as daemon:
        await channel.inject(dm("slow first", message_id="1"))
        await agent.wait_runs(1)
        await channel.inject(dm("second", message_id="2"))
        await channel.wait_text("still working on your previous message")
        release.set()
        await channel.wait_text("echo: slow first")
        (second,) = await daemon.kernel.store.inbound.find("fake", "2")
        outcomes = inbound_outcomes(daemon.kernel)
    assert second.status is InboundStatus.DROPPED
    assert second.reason == "busy"
    assert len(agent.runs) == 1
    assert outcomes == {"accepted": 1, "busy": 1}  # each message counted once


async def test_slow_conversation_does_not_block_another(tmp_path: Path) -> None:
    channel, agent = FakeChannel(), FakeAgent()
    release = agent.hold("slow")
    async with running(make_settings(tmp_path), [channel], agent):
        await channel.inject(dm("slow for alice", message_id="1", user="alice"))
        await agent.wait_runs(1)
        await channel.inject(dm("hi from bob", message_id="2", user="bob"))
        await channel.wait_text("echo: hi from bob")
        assert not any("slow for alice" in text for text in channel.texts() if "echo" in text)
        release.set()
        await channel.wait_text("echo: slow for alice")


async def test_global_bound_limits_concurrent_runs(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, agent={"max_concurrent_runs": 1})
    channel, agent = FakeChannel(), FakeAgent()
    release = agent.hold("slow")
    async with running(settings, [channel], agent) as daemon:
        await channel.inject(dm("slow for alice", message_id="1", user="alice"))
        await agent.wait_runs(1)
        await channel.inject(dm("hi from bob", message_id="2", user="bob"))
        await routed(daemon.kernel, 2)
        assert len(agent.runs) == 1
        assert daemon.kernel.conversations.lanes.active_runs == 1
        release.set()
        await channel.wait_text("echo: hi from bob")


async def test_stop_cancels_the_running_turn_and_clears_the_queue(tmp_path: Path) -> None:
    channel, agent = FakeChannel(), FakeAgent()
    agent.hold("slow")
    async with running(make_settings(tmp_path), [channel], agent) as daemon:
        await channel.inject(dm("slow first", message_id="1"))
        await agent.wait_runs(1)
        await channel.inject(dm("queued one", message_id="2"))
        await channel.inject(dm("/stop", message_id="3"))
        await channel.wait_text("Stopped the running reply. Dropped 1 queued message.")
        await channel.wait_text("⏹️ Stopped.")
        await daemon.kernel.conversations.lanes.wait_idle()
        (queued,) = await daemon.kernel.store.inbound.find("fake", "2")
    assert queued.reason == "stopped"
    assert len(agent.runs) == 1
