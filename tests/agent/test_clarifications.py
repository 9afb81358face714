"""``ask_clarification``: the run pauses with a question and the answer resumes it (design §7)."""

from __future__ import annotations

from pathlib import Path

from agent.embedded import EmbeddedBackend
from bot.config.settings import Settings
from bot.ports import ClarificationRequest
from bot.workspace import ThreadWorkspace
from tests.agent.support import (
    clarification,
    collect,
    final,
    received,
    roles,
    tool_names,
    tool_results,
    turn,
)
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall

ASK = ToolCall(
    name="ask_clarification",
    arguments={"question": "Which format?", "options": ["CSV", "JSON"]},
    id="call_ask",
)


async def test_a_question_ends_the_run_with_a_clarification_request(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer
) -> None:
    fake_model.script(Reply(text="One moment.", tool_calls=(ASK,)))
    thread = await backend.create_thread()

    events = await collect(backend.run(thread, turn("export my data")))

    assert clarification(events) == ClarificationRequest(
        question="Which format?", options=("CSV", "JSON")
    )
    assert tool_names(events) == ["ask_clarification"]
    assert len(fake_model.requests) == 1


async def test_the_answer_resumes_the_same_thread(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer
) -> None:
    fake_model.script(Reply(tool_calls=(ASK,)), Reply(text="JSON it is."))
    thread = await backend.create_thread()
    await collect(backend.run(thread, turn("export my data")))

    answer = final(await collect(backend.run(thread, turn("JSON", answer="JSON"))))

    assert answer.text == "JSON it is."
    resumed = (await received(fake_model, 2))[1]
    assert roles(resumed) == ["system", "user", "assistant", "tool"]
    assert tool_results(resumed) == {"call_ask": "The user answered: JSON"}


async def test_a_question_without_options(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer
) -> None:
    ask = ToolCall(name="ask_clarification", arguments={"question": "What is the deadline?"})
    fake_model.script(Reply(tool_calls=(ask,)))
    thread = await backend.create_thread()

    events = await collect(backend.run(thread, turn("plan it")))

    assert clarification(events) == ClarificationRequest(question="What is the deadline?")


async def test_a_pending_question_survives_a_restart(
    settings: Settings, fake_model: FakeOpenAIServer
) -> None:
    fake_model.script(Reply(tool_calls=(ASK,)), Reply(text="Exporting CSV."))
    async with EmbeddedBackend(settings) as first:
        thread = await first.create_thread()
        clarification(await collect(first.run(thread, turn("export my data"))))

    async with EmbeddedBackend(settings) as second:
        answer = final(await collect(second.run(thread, turn("CSV", answer="CSV"))))

    assert answer.text == "Exporting CSV."
    assert tool_results(fake_model.requests[1]) == {"call_ask": "The user answered: CSV"}


async def test_an_answer_with_nothing_pending_is_an_ordinary_message(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer
) -> None:
    thread = await backend.create_thread()

    answer = final(await collect(backend.run(thread, turn("CSV", answer="CSV"))))

    assert answer.text == "CSV"
    assert roles(fake_model.requests[0]) == ["system", "user"]


async def test_asking_again_after_an_answer(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer
) -> None:
    second_ask = ToolCall(
        name="ask_clarification", arguments={"question": "Compressed?", "options": ["yes", "no"]}
    )
    fake_model.script(Reply(tool_calls=(ASK,)), Reply(tool_calls=(second_ask,)), Reply(text="Ok."))
    thread = await backend.create_thread()
    await collect(backend.run(thread, turn("export")))

    again = clarification(await collect(backend.run(thread, turn("CSV", answer="CSV"))))
    answer = final(await collect(backend.run(thread, turn("no", answer="no"))))

    assert again.question == "Compressed?"
    assert answer.text == "Ok."
    assert sorted(tool_results(fake_model.requests[2]).values()) == [
        "The user answered: CSV",
        "The user answered: no",
    ]


async def test_resume_after_restart_uses_the_same_workspace(
    settings: Settings, fake_model: FakeOpenAIServer, state_dir: Path
) -> None:
    write = ToolCall(name="write_file", arguments={"path": "out.csv", "content": "a,b"})
    present = ToolCall(name="present_files", arguments={"paths": ["out.csv"]})
    fake_model.script(Reply(tool_calls=(ASK,)), Reply(tool_calls=(write, present)), Reply())
    async with EmbeddedBackend(settings) as first:
        thread = await first.create_thread()
        await collect(first.run(thread, turn("export")))
    async with EmbeddedBackend(settings) as second:
        answer = final(await collect(second.run(thread, turn("CSV", answer="CSV"))))

    expected = ThreadWorkspace.for_thread(state_dir, thread).outputs / "out.csv"
    assert [f.path for f in answer.files] == [expected]
    assert expected.read_text() == "a,b"


async def test_two_questions_in_one_reply_are_asked_in_turn(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer
) -> None:
    first = ToolCall(name="ask_clarification", arguments={"question": "Q1?"}, id="c1")
    second = ToolCall(name="ask_clarification", arguments={"question": "Q2?"}, id="c2")
    fake_model.script(Reply(tool_calls=(first, second)), Reply(text="Thanks."))
    thread = await backend.create_thread()

    asked_first = clarification(await collect(backend.run(thread, turn("go"))))
    asked_second = clarification(await collect(backend.run(thread, turn("A1", answer="A1"))))
    answer = final(await collect(backend.run(thread, turn("A2", answer="A2"))))

    assert (asked_first.question, asked_second.question) == ("Q1?", "Q2?")
    assert answer.text == "Thanks."
    assert tool_results(fake_model.requests[1]) == {
        "c1": "The user answered: A1",
        "c2": "The user answered: A2",
    }


async def test_a_call_before_the_question_is_not_run_again_by_the_answer(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer, state_dir: Path
) -> None:
    write = ToolCall(name="write_file", arguments={"path": "out.csv", "content": "a,b"})
    fake_model.script(Reply(tool_calls=(write, ASK)), Reply(text="Done."))
    thread = await backend.create_thread()
    clarification(await collect(backend.run(thread, turn("export"))))
    written = ThreadWorkspace.for_thread(state_dir, thread).outputs / "out.csv"
    written.write_text("changed since")

    final(await collect(backend.run(thread, turn("CSV", answer="CSV"))))

    assert written.read_text() == "changed since"
