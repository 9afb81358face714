"""The offline echo model behind the real graph and backend (design §2)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from agent.embedded import EmbeddedBackend
from agent.offline_model import OfflineEchoModel, respond
from bot.workspace import ThreadWorkspace
from tests.agent.support import (
    clarification,
    collect,
    final,
    offline_settings,
    streamed_text,
    tool_names,
    turn,
)


@pytest.fixture
async def offline(state_dir: Path) -> AsyncIterator[EmbeddedBackend]:
    async with EmbeddedBackend(offline_settings(state_dir)) as backend:
        yield backend


async def test_echoes_and_says_it_is_offline(offline: EmbeddedBackend) -> None:
    thread = await offline.create_thread()

    events = await collect(offline.run(thread, turn("hello there")))

    answer = final(events)
    assert answer.text == (
        "(offline echo model — no model API key configured) You said: hello there"
    )
    assert streamed_text(events) == answer.text
    assert len(events) > 3
    assert "offline echo model" in offline.description


async def test_ask_trigger_pauses_and_the_answer_resumes(offline: EmbeddedBackend) -> None:
    thread = await offline.create_thread()

    question = clarification(
        await collect(offline.run(thread, turn("ask: Which colour? | red | blue")))
    )
    answer = final(await collect(offline.run(thread, turn("blue", answer="blue"))))

    assert (question.question, question.options) == ("Which colour?", ("red", "blue"))
    assert answer.text == "(offline echo model) You chose: blue"


async def test_ask_trigger_survives_a_restart(state_dir: Path) -> None:
    async with EmbeddedBackend(offline_settings(state_dir)) as first:
        thread = await first.create_thread()
        clarification(await collect(first.run(thread, turn("ask: Proceed?"))))
    async with EmbeddedBackend(offline_settings(state_dir)) as second:
        answer = final(await collect(second.run(thread, turn("yes", answer="yes"))))

    assert answer.text == "(offline echo model) You chose: yes"


async def test_file_trigger_writes_and_presents(offline: EmbeddedBackend, state_dir: Path) -> None:
    thread = await offline.create_thread()

    events = await collect(offline.run(thread, turn("file: notes.md | # Notes | and a pipe")))

    answer = final(events)
    path = ThreadWorkspace.for_thread(state_dir, thread).outputs / "notes.md"
    assert tool_names(events) == ["write_file", "present_files"]
    assert answer.text == "(offline echo model) Wrote notes.md."
    assert [(f.path, f.name) for f in answer.files] == [(path, "notes.md")]
    assert path.read_text() == "# Notes | and a pipe"


async def test_file_trigger_with_an_escaping_name_is_refused(
    offline: EmbeddedBackend,
) -> None:
    thread = await offline.create_thread()

    answer = final(await collect(offline.run(thread, turn("file: ../../../x.txt | no"))))

    assert answer.files == ()
    assert "outside this conversation's workspace" in answer.text


def test_triggers_ignore_the_context_the_backend_appends() -> None:
    message = HumanMessage(content="ask: Pick | a | b\n\n[Note: the upload failed]")

    reply = respond([message])

    assert reply.tool_calls[0]["args"] == {"question": "Pick", "options": ["a", "b"]}


def test_a_plain_message_is_echoed_without_the_context() -> None:
    reply = respond([HumanMessage(content="hi\n\n[Note: x]")])

    assert reply.text.endswith("You said: hi")


async def test_the_model_binds_tools_and_invokes_without_streaming() -> None:
    model = OfflineEchoModel()

    reply = await model.bind_tools([]).ainvoke([HumanMessage(content="ping")])

    assert isinstance(reply, AIMessage)
    assert reply.text.endswith("You said: ping")
