"""A question bigger than one Slack message reaches the chat anyway (design §7): parts within
the block limits, one ``actions`` block of 25 buttons on the last, the other options numbered."""

from __future__ import annotations

from pathlib import Path

from tests.channels.slack_support import slack_daemon, slack_settings, texts, wait_text
from tests.fakes.agent import FakeAgent
from tests.fakes.slack_api import FakeSlack

DM = "D0001"
ROOMY = {"max_inbound_chars": 200_000}
"""The fake agent asks what it was sent, so the message carrying the question must pass."""


async def test_a_question_with_1300_options_is_shown_within_the_block_limits(
    tmp_path: Path,
) -> None:
    question = " ".join(f"word{n}" for n in range(2300))  # about 20 000 characters
    options = [f"option {n}" for n in range(1, 1301)]
    with FakeSlack() as fake:
        agent = FakeAgent()
        settings = slack_settings(tmp_path, fake, conversations=ROOMY)
        async with slack_daemon(settings, fake, agent) as run:
            fake.push_message(" | ".join([f"ask: {question}", *options]))
            await wait_text(fake, DM, "Reply with a number")
            shown = fake.channel_messages(DM)
            fake.push_message("1000")
            await wait_text(fake, DM, "answer: option 1000")
            await run.settle()
    actions = [b for m in shown for b in m.get("blocks") or () if b["type"] == "actions"]
    assert len(actions) == 1
    labels = [element["text"]["text"] for element in actions[0]["elements"]]
    assert labels == options[:25]
    joined = "\n".join(texts(fake, DM))
    assert "word0 word1" in joined
    assert "word2299" in joined
    assert "26. option 26" in joined
    assert "and 1225 more" in joined
    assert agent.runs[-1].turn.resume_answer == "option 1000"
