"""A question bigger than one Feishu card reaches the chat anyway (design §7): parts within the
card's 30 KB, twenty buttons on the last, the other options numbered and answered by number."""

from __future__ import annotations

from pathlib import Path

from tests.channels.feishu_support import DM, feishu_daemon, feishu_settings, texts, wait_text
from tests.fakes.agent import FakeAgent
from tests.fakes.feishu_api import FakeFeishu

ROOMY = {"max_inbound_chars": 200_000}
"""The fake agent asks what it was sent, so the message carrying the question must pass."""


async def test_a_20000_character_question_with_300_options_is_shown(tmp_path: Path) -> None:
    agent = FakeAgent()
    question = " ".join(f"词{n}" for n in range(4000))  # about 20 000 characters, CJK
    options = [f"option {n}" for n in range(1, 301)]
    with FakeFeishu() as fake:
        settings = feishu_settings(tmp_path, fake, conversations=ROOMY)
        async with feishu_daemon(settings, fake, agent) as run:
            fake.push_message(" | ".join([f"ask: {question}", *options]), chat_id=DM)
            await wait_text(fake, DM, "option 70")
            sent = fake.sent_messages(DM)
            fake.push_message("150", chat_id=DM)
            await wait_text(fake, DM, "answer: option 150")
            await run.settle()
    with_buttons = [m for m in sent if _buttons(m.content)]
    assert len(with_buttons) == 1
    assert with_buttons[0] is sent[-1]
    assert _buttons(sent[-1].content) == options[:20]
    assert all(len(m.raw_content.encode()) <= 30 * 1024 for m in sent)
    shown = "\n".join(texts(fake, DM))
    assert "词0 词1" in shown
    assert "词3999" in shown
    assert "21. option 21" in shown
    assert agent.runs[-1].turn.resume_answer == "option 150"


def _buttons(content: dict[str, object]) -> list[str]:
    body = content.get("body")
    elements = body.get("elements", []) if isinstance(body, dict) else []
    return [e["text"]["content"] for e in elements if e.get("tag") == "button"]
