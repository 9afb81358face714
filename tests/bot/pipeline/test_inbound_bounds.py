"""An inbound message longer than ``conversations.max_inbound_chars`` never reaches the agent:
its sender is told why, the journal entry ends, and the metric counts it (design §10)."""

from __future__ import annotations

from pathlib import Path

from bot.kernel import Kernel
from bot.records import InboundStatus
from tests.bot.harness import inbound_outcomes, make_settings, routed, running
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import FakeChannel, dm, group


async def journal_status(kernel: Kernel, message_id: str) -> tuple[InboundStatus, str | None]:
    (entry,) = await kernel.store.inbound.find("fake", message_id)
    return entry.status, entry.reason


async def test_a_300000_character_message_is_refused_with_a_reply(tmp_path: Path) -> None:
    channel, agent = FakeChannel(), FakeAgent()
    async with running(make_settings(tmp_path), [channel], agent) as daemon:
        await channel.inject(dm("x" * 300_000, message_id="1"))
        refusal = await channel.wait_text("characters long")
        await channel.inject(dm("and now a short one", message_id="2"))
        await channel.wait_text("echo: and now a short one")
        await routed(daemon.kernel, 2)
        status = await journal_status(daemon.kernel, "1")
        outcomes = inbound_outcomes(daemon.kernel)
    assert refusal.text == (
        "Your message is 300,000 characters long; the limit is 20,000. Send it as a file instead."
    )
    assert [run.turn.text for run in agent.runs] == ["and now a short one"]
    assert status == (InboundStatus.DROPPED, "too_long")
    assert outcomes.get("too_long") == 1


async def test_the_limit_is_configurable_and_applies_to_commands_and_answers(
    tmp_path: Path,
) -> None:
    settings = make_settings(tmp_path, conversations={"max_inbound_chars": 100})
    channel, agent = FakeChannel(), FakeAgent()
    async with running(settings, [channel], agent) as daemon:
        await channel.inject(dm("y" * 100, message_id="1"))
        await channel.wait_text("echo: " + "y" * 100)
        await channel.inject(dm("/new " + "z" * 100, message_id="2"))
        await channel.wait_text("105 characters long; the limit is 100")
        await channel.inject(dm("ask: which one? | a | b", message_id="3"))
        await channel.wait_text("which one?")
        await channel.inject(dm("w" * 101, message_id="4"))
        await channel.wait_text("101 characters long")
        await channel.inject(dm("2", message_id="5"))
        await channel.wait_text("answer: b")  # the question was still open
        await routed(daemon.kernel, 5)
    assert len(agent.runs) == 3
    assert all("z" * 100 not in run.turn.text and "w" * 101 not in run.turn.text
               for run in agent.runs)  # fmt: skip


async def test_unaddressed_group_chatter_is_not_answered_even_when_long(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, conversations={"max_inbound_chars": 100})
    channel, agent = FakeChannel(), FakeAgent()
    async with running(settings, [channel], agent) as daemon:
        await channel.inject(group("q" * 500, message_id="1"))
        await channel.inject(group("@fakebot " + "r" * 500, message_id="2", mentions_bot=True))
        await channel.wait_text("characters long")
        await routed(daemon.kernel, 2)
        first = await journal_status(daemon.kernel, "1")
        second = await journal_status(daemon.kernel, "2")
    assert agent.runs == []
    assert len(channel.texts()) == 1
    assert first == (InboundStatus.DROPPED, "not_addressed")
    assert second == (InboundStatus.DROPPED, "too_long")
