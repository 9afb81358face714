"""A question bigger than a Telegram message reaches the chat anyway (design §7): split within
4096 UTF-16 units, cut with a marker past five messages, ten buttons on the last part and the
other options numbered; and a question Telegram refuses ends the turn visibly."""

from __future__ import annotations

import json
from pathlib import Path

from tests.channels.telegram_support import telegram_daemon, telegram_settings, texts, wait_text
from tests.fakes.agent import FakeAgent
from tests.fakes.telegram_api import FakeTelegram

ROOMY = {"max_inbound_chars": 200_000}
"""The fake agent asks what it was sent, so the message carrying the question must pass."""


def _labels(reply_markup: object) -> list[str]:
    markup = json.loads(reply_markup) if isinstance(reply_markup, str) else reply_markup
    assert isinstance(markup, dict)
    return [button["text"] for row in markup["inline_keyboard"] for button in row]


async def test_a_20000_character_question_with_300_options_is_shown(tmp_path: Path) -> None:
    agent = FakeAgent()
    question = " ".join(f"word{n}" for n in range(2300))  # about 20 000 characters
    options = [f"option {n}" for n in range(1, 301)]
    with FakeTelegram() as fake:
        settings = telegram_settings(tmp_path, fake, conversations=ROOMY)
        async with telegram_daemon(settings, agent) as run:
            fake.push_message(" | ".join([f"ask: {question}", *options]))
            await wait_text(fake, 42, "option 60")
            shown = fake.chat_messages(42)
            fake.push_message("150")
            await wait_text(fake, 42, "answer: option 150")
            await run.settle()
    parts = [message for message in shown if "reply_markup" not in message]
    (last,) = [message for message in shown if "reply_markup" in message]
    assert 2 <= len(parts) + 1 <= 5
    assert _labels(last["reply_markup"]) == options[:10]
    text = "\n".join(texts(fake, 42))
    assert "word0 word1" in text
    assert "too long to show in full" in text
    assert "11. option 11" in text
    assert "and 240 more" in text
    assert agent.runs[-1].turn.resume_answer == "option 150"


async def test_a_question_telegram_refuses_ends_the_turn_visibly(tmp_path: Path) -> None:
    agent = FakeAgent()
    with FakeTelegram() as fake:
        async with telegram_daemon(telegram_settings(tmp_path, fake), agent) as run:
            fake.fail_next("sendMessage", status=400, description="Bad Request: BUTTON_INVALID",
                           times=2)  # fmt: skip
            fake.push_message("ask: Which colour? | red | blue")
            await wait_text(fake, 42, "could not finish")
            fake.push_message("2")
            await wait_text(fake, 42, "echo: 2")  # no invisible question took it as an answer
            await run.settle()
    assert [run.turn.resume_answer for run in agent.runs] == [None, None]
