"""The poison-message guard counts only crashes that hit a message's own agent run (design
§11): a turn stopped while it waited (queued, or for the agent's load) keeps its re-runs."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.records import InboundStatus
from tests.bot.harness import make_settings, running
from tests.bot.pipeline.crashed import journal_running_turn
from tests.bot.pipeline.loading_agent import LoadingAgent
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import FakeChannel

APOLOGY = "could not be answered after a restart"


async def test_stops_while_the_rerun_waits_for_the_agents_load_do_not_count(
    tmp_path: Path,
) -> None:
    """Killed in its model call once, then stopped three times while its re-run only waited
    for the agent to load: still answered, never given up."""
    settings = make_settings(tmp_path, daemon={"shutdown_grace_s": 0.5})
    await journal_running_turn(settings.state_dir, "interrupted question")
    warmed: list[int] = []
    for start in range(3):
        channel, agent = FakeChannel(), LoadingAgent(FakeAgent())
        async with running(settings, [channel], agent):
            if start == 0:  # the one notice of the interrupted turn (later ones dedupe)
                await channel.wait_text("Resuming after a restart")
            async with asyncio.timeout(10):
                await _rerun_waiting_or_given_up(agent, channel)
        assert not any(APOLOGY in text for text in channel.texts())
        assert agent.inner.runs == []
        warmed.append(agent.warmed)
    channel, agent = FakeChannel(), LoadingAgent(FakeAgent())
    agent.loaded.set()
    async with running(settings, [channel], agent) as daemon:
        await channel.wait_text("echo: interrupted question", within=10)
        await daemon.kernel.conversations.lanes.wait_idle()
        (entry,) = await daemon.kernel.store.inbound.find("fake", "1")
    assert not any(APOLOGY in text for text in channel.texts())
    assert entry.status is InboundStatus.HANDLED
    assert len(agent.inner.runs) == 1
    assert warmed == [1, 1, 1]  # each start's recovery began the load before the re-run


async def _rerun_waiting_or_given_up(agent: LoadingAgent, channel: FakeChannel) -> None:
    """Until the re-run waits for the load, or the message was given up (the apology)."""
    async with asyncio.TaskGroup() as group:
        waits = (
            group.create_task(agent.waiting.wait(), name="test:rerun-waits"),
            group.create_task(channel.wait_text(APOLOGY, within=30), name="test:apology"),
        )
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for wait in waits:
            wait.cancel()
