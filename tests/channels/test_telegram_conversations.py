"""Clarifications by inline button and by reply, and files coming in (design §6, §7)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from tests.channels.telegram_support import (
    mention,
    telegram_daemon,
    telegram_settings,
    wait_text,
)
from tests.fakes.agent import FakeAgent
from tests.fakes.telegram_api import FakeTelegram

GROUP = -1001234


def _buttons(reply_markup: str) -> dict[str, str]:
    rows = json.loads(reply_markup)["inline_keyboard"]
    return {button["text"]: button["callback_data"] for row in rows for button in row}


async def test_a_question_is_answered_with_an_inline_button(tmp_path: Path) -> None:
    agent = FakeAgent()
    with FakeTelegram() as fake:
        async with telegram_daemon(telegram_settings(tmp_path, fake), agent) as run:
            fake.push_message("ask: Which colour? | red | blue")
            question = await fake.await_call("sendMessage", lambda c: "reply_markup" in c.params)
            assert question.params["text"] == "❓ Which colour?"
            buttons = _buttons(question.params["reply_markup"])
            assert set(buttons) == {"red", "blue"}
            assert all(len(data.encode()) <= 64 for data in buttons.values())
            message_id = fake.chat_messages(42)[-1]["message_id"]
            fake.push_callback_query(data=buttons["blue"], chat_id=42, message_id=message_id)
            await fake.await_call("answerCallbackQuery")
            await wait_text(fake, 42, "answer: blue")
            await run.settle()
        first, resumed = agent.runs
        assert resumed.thread_id == first.thread_id
        assert resumed.turn.resume_answer == "blue"
        assert len(fake.calls("answerCallbackQuery")) == 1


async def test_a_question_in_a_group_is_answered_by_replying_to_it(tmp_path: Path) -> None:
    agent = FakeAgent()
    group: dict[str, Any] = {"chat_id": GROUP, "chat_type": "supergroup"}
    with FakeTelegram() as fake:
        async with telegram_daemon(telegram_settings(tmp_path, fake), agent) as run:
            text = "@fake_bot ask: Ship it? | yes | no"
            fake.push_message(text, entities=mention(text), **group)
            await fake.await_call("sendMessage", lambda c: "reply_markup" in c.params)
            question = fake.chat_messages(GROUP)[-1]["message_id"]
            fake.push_message("no, wait a week", reply_to_message_id=question, **group)
            await wait_text(fake, GROUP, "answer: no, wait a week")
            await run.settle()
        assert agent.runs[1].turn.resume_answer == "no, wait a week"


async def test_a_question_in_a_dm_is_answered_by_the_next_plain_message(tmp_path: Path) -> None:
    agent = FakeAgent()
    with FakeTelegram() as fake:
        async with telegram_daemon(telegram_settings(tmp_path, fake), agent) as run:
            fake.push_message("ask: Size? | small | large")
            await fake.await_call("sendMessage", lambda c: "reply_markup" in c.params)
            fake.push_message("2")
            await wait_text(fake, 42, "answer: large")
            await run.settle()


async def test_a_photo_with_a_caption_lands_in_uploads(tmp_path: Path) -> None:
    agent = FakeAgent()
    with FakeTelegram() as fake:
        fake.add_file("photo-small", b"small")
        fake.add_file("photo-large", b"the large photo bytes")
        async with telegram_daemon(telegram_settings(tmp_path, fake), agent) as run:
            fake.push_message(
                caption="what is this?", photo_file_ids=["photo-small", "photo-large"]
            )
            await wait_text(fake, 42, "echo: what is this?")
            await run.settle()
        (upload,) = agent.runs[0].turn.uploads
        assert upload.path.read_bytes() == b"the large photo bytes"
        assert upload.path.parent == tmp_path.resolve() / "threads" / "t1" / "uploads"
        assert upload.mime == "image/jpeg"
        fetched = fake.calls("getFile")
        assert [c.params["file_id"] for c in fetched] == ["photo-large"]


async def test_documents_are_saved_and_a_missing_one_becomes_a_note(tmp_path: Path) -> None:
    agent = FakeAgent()
    with FakeTelegram() as fake:
        fake.add_file("doc-ok", b"id,name\n1,Ada\n")
        async with telegram_daemon(telegram_settings(tmp_path, fake), agent) as run:
            fake.push_message(caption="a table", document_file_id="doc-ok",
                              document_name="people.csv")  # fmt: skip
            await wait_text(fake, 42, "echo: a table")
            fake.push_message(caption="missing", document_file_id="never-added",
                              document_name="ghost.pdf")  # fmt: skip
            await wait_text(fake, 42, "echo: missing")
            await run.settle()
        first, second = (run.turn for run in agent.runs)
        assert first.uploads[0].path.read_bytes() == b"id,name\n1,Ada\n"
        assert first.uploads[0].name == "people.csv"
        assert not second.uploads
        assert "ghost.pdf" in second.notes[0]


async def test_the_token_never_reaches_the_logs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    for noisy in ("httpx", "httpcore"):  # quieted by bot/ops/logs.py in the daemon, as here
        caplog.set_level(logging.WARNING, logger=noisy)
    agent = FakeAgent()
    with FakeTelegram() as fake:
        fake.add_file("doc", b"payload")
        fake.fail_next("downloadFile", status=500, description="Internal Server Error")
        async with telegram_daemon(telegram_settings(tmp_path, fake), agent) as run:
            fake.push_message(caption="read this", document_file_id="doc", document_name="a.txt")
            await wait_text(fake, 42, "echo: read this")
            await run.settle()
        assert "could not be downloaded" in agent.runs[0].turn.notes[0]
        assert fake.calls("downloadFile")
        assert fake.token not in caplog.text
        assert fake.token.split(":")[1] not in caplog.text
