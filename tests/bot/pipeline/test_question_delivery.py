"""A question the agent asks always reaches the user in a shape the platform takes, or the turn
ends saying it could not (design §7): never a pending question nobody saw."""

from __future__ import annotations

from pathlib import Path

from bot.errors import InvalidRequest
from bot.messages import OutboundText
from bot.ports import ChannelCapabilities
from bot.records import InboundStatus
from tests.bot.harness import make_settings, routed, running
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import FakeChannel, dm

BUTTONS_ONLY = ChannelCapabilities(text_limit=1000, buttons=True)
"""No reactions, typing or edits: the question is the first thing the channel is asked to do."""
ROOMY = {"conversations": {"max_inbound_chars": 1_000_000}}


def ask(question: str, options: list[str]) -> str:
    return " | ".join([f"ask: {question}", *options])


def questions_sent(channel: FakeChannel) -> list[OutboundText]:
    return [s.delivery for s in channel.sent if isinstance(s.delivery, OutboundText)]


async def test_a_refused_question_ends_the_turn_and_is_not_left_pending(tmp_path: Path) -> None:
    channel, agent = FakeChannel(caps=BUTTONS_ONLY), FakeAgent()
    refusal = InvalidRequest("Bad Request: message is too long")
    channel.fail_next.extend([refusal, refusal])  # rich, then the plain fallback
    async with running(make_settings(tmp_path), [channel], agent) as daemon:
        await channel.inject(dm(ask("Which one?", ["a", "b"]), message_id="1"))
        failure = await channel.wait_text("could not finish")
        await routed(daemon.kernel, 1)
        (entry,) = await daemon.kernel.store.inbound.find("fake", "1")
        await channel.inject(dm("2", message_id="2"))
        await channel.wait_text("echo: 2")  # a new turn: no invisible question took it
    assert "question" in failure.text
    assert entry.status is InboundStatus.FAILED
    assert [run.turn.resume_answer for run in agent.runs] == [None, None]


async def test_a_long_question_with_many_options_is_split_and_numbered(tmp_path: Path) -> None:
    channel, agent = FakeChannel(caps=BUTTONS_ONLY), FakeAgent()
    question = " ".join(f"word{n}" for n in range(400))  # about 3 000 characters
    options = [f"option {n}" for n in range(1, 31)]
    async with running(make_settings(tmp_path, **ROOMY), [channel], agent):
        await channel.inject(dm(ask(question, options), message_id="1"))
        last = await channel.wait_for(lambda s: isinstance(s.delivery, OutboundText)
                                      and bool(s.delivery.buttons))  # fmt: skip
        parts = questions_sent(channel)
        await channel.inject(dm("25", message_id="2"))
        await channel.wait_text("answer: option 25")
    assert len(parts) >= 2
    assert all(len(part.text) <= 1000 for part in parts)
    assert parts[-1] is last.delivery
    assert [button.label for button in parts[-1].buttons] == options[:10]
    shown = "\n".join(part.text for part in parts)
    assert "word0" in shown
    assert "word399" in shown
    assert "11. option 11" in shown
    assert "30. option 30" in shown
    assert "1. option 1\n" not in shown  # buttons are not listed again


async def test_a_huge_question_is_cut_with_a_visible_marker(tmp_path: Path) -> None:
    channel, agent = FakeChannel(caps=BUTTONS_ONLY), FakeAgent()
    question = "start " + "blah " * 60_000 + "end"
    async with running(make_settings(tmp_path, **ROOMY), [channel], agent):
        await channel.inject(dm(ask(question, ["yes", "no"]), message_id="1"))
        await channel.wait_for(lambda s: isinstance(s.delivery, OutboundText)
                               and bool(s.delivery.buttons))  # fmt: skip
        parts = questions_sent(channel)
        await channel.inject(dm("yes", message_id="2"))
        await channel.wait_text("answer: yes")
    assert 2 <= len(parts) <= 5
    assert all(len(part.text) <= 1000 for part in parts)
    shown = "\n".join(part.text for part in parts)
    assert "start" in shown
    assert "too long to show in full" in shown
    assert [button.label for button in parts[-1].buttons] == ["yes", "no"]
