"""The real daemon with the real embedded graph through ChatOpenAI against the fake model.

These are the agent acceptance paths as a chat user sees them: history, /new, questions
answered by message and by button, a question surviving a restart, files after the text,
and failures that end with a clear message.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from agent.embedded import EmbeddedBackend
from bot.config.settings import Settings
from bot.messages import ButtonPress, OutboundFile, OutboundText, TextEdit, utc_now
from tests.agent.support import received, tool_results
from tests.bot.harness import make_settings, running
from tests.fakes.channel import PLAIN_CAPS, FakeChannel, dm, group
from tests.fakes.openai_server import ErrorReply, FakeOpenAIServer, Hang, Reply, ToolCall

ASK = ToolCall(
    name="ask_clarification",
    arguments={"question": "Which format?", "options": ["CSV", "JSON"]},
    id="call_ask",
)


@pytest.fixture
def model() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def _settings(tmp_path: Path, model: FakeOpenAIServer, **sections: Any) -> Settings:
    agent = {"model": {"base_url": model.base_url, "api_key": "sk-test", "name": "fake-model"}}
    agent.update(sections.pop("agent", {}))
    return make_settings(tmp_path, agent=agent, **sections)


def _backend(settings: Settings) -> EmbeddedBackend:
    return EmbeddedBackend(settings, max_retries=0)


async def test_history_is_kept_per_thread_and_new_starts_fresh(
    tmp_path: Path, model: FakeOpenAIServer
) -> None:
    settings = _settings(tmp_path, model)
    model.script(Reply(text="Nice to meet you, Ada."), Reply(text="You are Ada."), Reply(text="?"))
    channel = FakeChannel()
    async with running(settings, [channel], _backend(settings)):
        await channel.inject(dm("I am Ada", message_id="1"))
        await channel.wait_text("Nice to meet you")
        await channel.inject(dm("Who am I?", message_id="2"))
        await channel.wait_text("You are Ada.")
        await channel.inject(dm("/new", message_id="3"))
        await channel.wait_text("Started a new conversation")
        await channel.inject(dm("Who am I now?", message_id="4"))
        await channel.wait_text("?")
    second, third = model.requests[1], model.requests[2]
    assert [m["content"] for m in second.messages if m["role"] == "user"] == [
        "I am Ada",
        "Who am I?",
    ]
    assert [m["content"] for m in third.messages if m["role"] == "user"] == ["Who am I now?"]


async def test_question_answered_by_plain_message(tmp_path: Path, model: FakeOpenAIServer) -> None:
    settings = _settings(tmp_path, model)
    model.script(Reply(text="One moment.", tool_calls=(ASK,)), Reply(text="JSON it is."))
    channel = FakeChannel(caps=PLAIN_CAPS)
    async with running(settings, [channel], _backend(settings)):
        await channel.inject(dm("export my data", message_id="1"))
        question = await channel.wait_text("Which format?")
        assert "1. CSV\n2. JSON" in question.text
        await channel.inject(dm("2", message_id="2"))
        await channel.wait_text("JSON it is.")
    resumed = (await received(model, 2))[1]
    assert tool_results(resumed) == {"call_ask": "The user answered: JSON"}
    assert "One moment." in channel.texts()[0]


async def test_question_answered_by_button(tmp_path: Path, model: FakeOpenAIServer) -> None:
    settings = _settings(tmp_path, model)
    model.script(Reply(tool_calls=(ASK,)), Reply(text="CSV coming up."))
    channel = FakeChannel()
    async with running(settings, [channel], _backend(settings)):
        await channel.inject(dm("export my data", message_id="1"))
        question = await channel.wait_text("Which format?")
        assert isinstance(question.delivery, OutboundText)
        press = ButtonPress(payload=question.delivery.buttons[0].payload)
        await channel.inject(dm("", message_id="cb1", button=press))
        await channel.wait_text("CSV coming up.")
    assert tool_results(model.requests[1]) == {"call_ask": "The user answered: CSV"}


async def test_pending_question_survives_a_daemon_restart(
    tmp_path: Path, model: FakeOpenAIServer
) -> None:
    settings = _settings(tmp_path, model)
    model.script(Reply(tool_calls=(ASK,)), Reply(text="Resumed with CSV."))
    channel = FakeChannel(caps=PLAIN_CAPS)
    async with running(settings, [channel], _backend(settings)):
        await channel.inject(dm("export my data", message_id="1"))
        await channel.wait_text("Which format?")
    channel = FakeChannel(caps=PLAIN_CAPS)
    async with running(settings, [channel], _backend(settings)):
        await channel.inject(dm("CSV", message_id="2"))
        await channel.wait_text("Resumed with CSV.")
    assert tool_results(model.requests[1]) == {"call_ask": "The user answered: CSV"}


async def test_written_file_is_delivered_after_the_text(
    tmp_path: Path, model: FakeOpenAIServer
) -> None:
    settings = _settings(tmp_path, model)
    content = "name,score\nada,10\n"
    model.script(
        Reply(
            tool_calls=(
                ToolCall(
                    name="write_file", arguments={"path": "r.csv", "content": content}, id="w"
                ),
            )
        ),
        Reply(tool_calls=(ToolCall(name="present_files", arguments={"paths": ["r.csv"]}, id="p"),)),
        Reply(text="Here is your report."),
    )
    channel = FakeChannel(caps=PLAIN_CAPS)
    async with running(settings, [channel], _backend(settings)):
        await channel.inject(dm("make a report", message_id="1"))
        upload = await channel.wait_for(lambda s: isinstance(s.delivery, OutboundFile))
    kinds = [type(s.delivery).__name__ for s in channel.sent]
    assert kinds == ["OutboundText", "OutboundFile"]
    assert channel.texts() == ["Here is your report."]
    assert isinstance(upload.delivery, OutboundFile)
    assert Path(upload.delivery.path).read_text() == content


@pytest.mark.parametrize(
    ("scripted", "expected"),
    [
        (ErrorReply(status=401, message="bad key"), "API key"),
        (ErrorReply(status=429, message="slow down"), "rate"),
        (ErrorReply(status=500, message="boom"), "model"),
    ],
)
async def test_model_errors_end_with_a_clear_message(
    tmp_path: Path, model: FakeOpenAIServer, scripted: ErrorReply, expected: str
) -> None:
    settings = _settings(tmp_path, model)
    model.script(scripted)
    channel = FakeChannel()
    async with running(settings, [channel], _backend(settings)):
        await channel.inject(dm("hello", message_id="1"))
        final = await channel.wait_text("Sorry")
    assert expected.lower() in final.text.lower()
    assert "(ref `" in final.text
    assert "Traceback" not in final.text
    assert not any("▍" in s.text for s in channel.sent if not s.is_progress)


async def test_unreachable_model_and_timeout(tmp_path: Path, model: FakeOpenAIServer) -> None:
    unreachable = make_settings(
        tmp_path / "a", agent={"model": {"base_url": "http://127.0.0.1:9/v1", "api_key": "k"}}
    )
    channel = FakeChannel()
    async with running(unreachable, [channel], _backend(unreachable)):
        await channel.inject(dm("hello", message_id="1"))
        final = await channel.wait_text("Sorry", within=15)
    assert "reach" in final.text
    slow = _settings(tmp_path / "b", model, agent={"run_timeout_s": 0.5})
    model.script(Hang())
    channel = FakeChannel()
    async with running(slow, [channel], _backend(slow)):
        await channel.inject(dm("hello", message_id="1"))
        final = await channel.wait_text("did not finish within 0.5 seconds")
    assert "(ref `" in final.text


async def test_a_reminder_the_agent_schedules_arrives_in_the_topic_it_was_asked_in(
    tmp_path: Path, model: FakeOpenAIServer
) -> None:
    settings = _settings(tmp_path, model, access={"group_policy": "all"})
    at = (utc_now() + timedelta(seconds=3)).astimezone(ZoneInfo("Europe/Berlin"))
    remind = ToolCall(
        name="schedule_message",
        arguments={
            "at": at.replace(tzinfo=None).isoformat(timespec="seconds"),
            "timezone": "Europe/Berlin",
            "kind": "message",
            "text": "⏰ Stand-up now",
        },
        id="call_remind",
    )
    model.script(Reply(tool_calls=(remind,)), Reply(text="I'll remind you."))
    channel = FakeChannel()
    async with running(settings, [channel], _backend(settings)):
        await channel.inject(group("remind me in 3 seconds", message_id="1", thread_root_id="t1"))
        answer = await channel.wait_text("I'll remind you.")
        reminder = await channel.wait_text("⏰ Stand-up now", within=15)
        await channel.inject(group("/schedules", message_id="2", thread_root_id="t1"))
        listed = await channel.wait_text("No active schedules")
    result = tool_results(model.requests[1])["call_remind"]
    assert "Scheduled #1 message at" in result
    assert isinstance(answer.delivery, OutboundText | TextEdit)
    assert isinstance(reminder.delivery, OutboundText)
    assert isinstance(listed.delivery, OutboundText)
    assert reminder.delivery.destination == answer.delivery.destination
    assert reminder.delivery.destination.topic_id == "t1"
    assert listed.delivery.destination.topic_id == "t1"
