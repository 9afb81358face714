"""A question bigger than one DingTalk message reaches the chat anyway (design §7): DingTalk
has no buttons, so the options are numbered, and the parts stay within its byte limits."""

from __future__ import annotations

from pathlib import Path

from tests.channels.dingtalk_support import (
    ALICE,
    dingtalk_daemon,
    dingtalk_settings,
    texts,
    wait_text,
)
from tests.fakes.agent import FakeAgent
from tests.fakes.dingtalk_api import FakeDingTalk

ROOMY = {"max_inbound_chars": 200_000}
"""The fake agent asks what it was sent, so the message carrying the question must pass."""


async def test_a_20000_character_question_with_300_options_is_shown(tmp_path: Path) -> None:
    question = " ".join(f"钉{n}" for n in range(4000))  # about 20 000 characters, 28 000 bytes
    options = [f"option {n}" for n in range(1, 301)]
    with FakeDingTalk() as fake:
        agent = FakeAgent()
        settings = dingtalk_settings(tmp_path, fake, conversations=ROOMY)
        async with dingtalk_daemon(settings, fake, agent) as run:
            fake.push_message(" | ".join([f"ask: {question}", *options]), sender_staff_id=ALICE)
            await wait_text(fake, ALICE, "Reply with a number")
            shown = texts(fake, ALICE)
            fake.push_message("150", sender_staff_id=ALICE)
            await wait_text(fake, ALICE, "answer: option 150")
            await run.settle()
    assert len(shown) >= 2
    joined = "\n".join(shown)
    assert "钉0 钉1" in joined
    assert "1. option 1" in joined
    assert "50. option 50" in joined
    assert "and 250 more" in joined
    assert agent.runs[-1].turn.resume_answer == "option 150"
