"""The embedded backend driving the real graph through ChatOpenAI against the fake model."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from agent.checkpoints import checkpointer
from agent.embedded import EmbeddedBackend
from agent.graph import INTERRUPTED_TOOL_RESULT
from bot.config.settings import Settings
from bot.config.store import StoreSettings
from bot.errors import AgentError
from bot.ports import SavedUpload
from bot.workspace import ThreadWorkspace
from tests.agent.support import (
    SYSTEM_PROMPT,
    collect,
    final,
    model_settings,
    received,
    roles,
    streamed_text,
    tool_names,
    turn,
)
from tests.fakes.openai_server import ErrorReply, FakeOpenAIServer, Hang, Reply, ToolCall


async def test_streams_text_deltas_that_add_up_to_the_final_text(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer
) -> None:
    fake_model.script(Reply(text="Hello there, how can I help you today?", chunk_chars=3))
    thread = await backend.create_thread()

    events = await collect(backend.run(thread, turn("hi")))

    answer = final(events)
    assert answer.text == "Hello there, how can I help you today?"
    assert streamed_text(events) == answer.text
    assert len(events) > 5  # token by token, not one snapshot
    request = fake_model.requests[0]
    assert request.body["stream"] is True
    assert request.messages[0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert request.messages[1:] == [{"role": "user", "content": "hi"}]
    assert request.authorization == "Bearer sk-test"
    # History and tool schemas travel as extra_body (agent/openai_model.py): same wire body.
    tools = {tool["function"]["name"]: tool for tool in request.body["tools"]}
    assert "ask_clarification" in tools
    assert tools["ask_clarification"]["type"] == "function"
    assert "question" in tools["ask_clarification"]["function"]["parameters"]["properties"]


async def test_second_turn_sees_the_first_exchange(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer
) -> None:
    fake_model.script(Reply(text="Nice to meet you, Ada."), Reply(text="You are Ada."))
    thread = await backend.create_thread()

    await collect(backend.run(thread, turn("My name is Ada.")))
    answer = final(await collect(backend.run(thread, turn("What is my name?"))))

    assert answer.text == "You are Ada."
    second = fake_model.requests[1]
    assert [(m["role"], m["content"]) for m in second.messages[1:]] == [
        ("user", "My name is Ada."),
        ("assistant", "Nice to meet you, Ada."),
        ("user", "What is my name?"),
    ]


async def test_history_survives_a_restart(
    settings: Settings, fake_model: FakeOpenAIServer, state_dir: Path
) -> None:
    async with EmbeddedBackend(settings) as first:
        thread = await first.create_thread()
        await collect(first.run(thread, turn("remember 42")))

    async with EmbeddedBackend(settings) as second:
        await collect(second.run(thread, turn("what number?")))

    assert (state_dir / "agent.db").is_file()
    assert roles(fake_model.requests[1]) == ["system", "user", "assistant", "user"]
    assert fake_model.requests[1].messages[1]["content"] == "remember 42"


async def test_a_new_thread_starts_with_a_fresh_history(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer
) -> None:
    first, second = await backend.create_thread(), await backend.create_thread()

    await collect(backend.run(first, turn("one")))
    await collect(backend.run(second, turn("two")))

    assert first != second
    assert roles(fake_model.requests[1]) == ["system", "user"]
    assert fake_model.requests[1].messages[1]["content"] == "two"


async def test_text_around_tool_calls_is_joined_and_tools_are_reported(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer
) -> None:
    call = ToolCall(name="list_files", arguments={})
    fake_model.script(Reply(text="Let me look.", tool_calls=(call,)), Reply(text="Nothing yet."))
    thread = await backend.create_thread()

    events = await collect(backend.run(thread, turn("what files do I have?")))

    answer = final(events)
    assert answer.text == "Let me look.\n\nNothing yet."
    assert streamed_text(events) == answer.text
    assert tool_names(events) == ["list_files"]
    tool_message = fake_model.requests[1].messages[-1]
    assert tool_message["role"] == "tool"
    assert "empty" in tool_message["content"]


async def test_only_assistant_text_is_streamed(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer
) -> None:
    call = ToolCall(name="write_file", arguments={"path": "secret.txt", "content": "TOOL-ONLY"})
    fake_model.script(Reply(tool_calls=(call,)), Reply(text="Saved."))
    thread = await backend.create_thread()

    events = await collect(backend.run(thread, turn("save it")))

    assert final(events).text == "Saved."
    assert streamed_text(events) == "Saved."
    assert SYSTEM_PROMPT not in repr(events)
    assert "TOOL-ONLY" not in repr(events)
    assert "Wrote" not in repr(events)


async def test_uploads_and_notes_are_named_in_the_user_message(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer, state_dir: Path
) -> None:
    thread = await backend.create_thread()
    workspace = ThreadWorkspace.for_thread(state_dir, thread)
    workspace.create()
    saved = workspace.uploads / "data.csv"
    saved.write_text("a,b\n1,2\n")
    upload = SavedUpload(name="data.csv", path=saved, mime="text/csv", size=8)
    note = 'the attachment "huge.zip" was not downloaded: too large'

    await collect(backend.run(thread, turn("summarise", uploads=(upload,), notes=(note,))))

    content = fake_model.requests[0].messages[-1]["content"]
    assert content.startswith("summarise\n\n")
    assert "uploads/data.csv (name: data.csv, text/csv, 8 bytes)" in content
    assert note in content


async def test_a_cancelled_run_leaves_the_thread_usable(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer
) -> None:
    fake_model.script(Hang())
    thread = await backend.create_thread()
    task = asyncio.create_task(collect(backend.run(thread, turn("slow question"))))
    await received(fake_model, 1)

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    answer = final(await collect(backend.run(thread, turn("next question"))))

    assert answer.text == "next question"
    assert roles(fake_model.requests[1]) == ["system", "user", "user"]


async def _killed_during(
    settings: Settings, fake_model: FakeOpenAIServer, text: str, *, requests: int = 1
) -> str:
    """A daemon that stops dead (its backend gone) once the model got ``requests`` calls for
    ``text``'s turn; returns the thread, left as the checkpoints had it."""
    async with EmbeddedBackend(settings) as first:
        thread = await first.create_thread()
        task = asyncio.create_task(collect(first.run(thread, turn(text))))
        await received(fake_model, requests)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    return thread


async def test_a_turn_rerun_after_a_crash_shows_the_model_its_message_once(
    settings: Settings, fake_model: FakeOpenAIServer
) -> None:
    """Killed while the model thinks: the checkpoint holds the user's message; recovery runs
    the same turn again, and the model must see it once, not twice."""
    fake_model.script(Hang(), Reply(text="the answer"))
    thread = await _killed_during(settings, fake_model, "what is 6 x 7?")

    async with EmbeddedBackend(settings) as second:
        answer = final(await collect(second.run(thread, turn("what is 6 x 7?"))))

    assert answer.text == "the answer"
    rerun = fake_model.requests[1]
    assert roles(rerun) == ["system", "user"]
    assert rerun.messages[1]["content"] == "what is 6 x 7?"


async def test_a_rerun_merged_with_queued_messages_adds_only_what_the_checkpoint_lacks(
    settings: Settings, fake_model: FakeOpenAIServer
) -> None:
    """Killed while the model streams with two messages queued: recovery merges the three into
    one turn. The checkpoint already holds the first; the model sees it once, then the others."""
    fake_model.script(Hang(), Reply(text="the answer"))
    thread = await _killed_during(settings, fake_model, "M061")

    async with EmbeddedBackend(settings) as second:
        answer = final(await collect(second.run(thread, turn("M061\n\nM062\n\nM063"))))

    assert answer.text == "the answer"
    users = [m["content"] for m in fake_model.requests[1].messages if m["role"] == "user"]
    assert users == ["M061", "M062\n\nM063"]


async def test_a_rerun_stopped_after_a_tool_step_continues_from_the_checkpoint(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer
) -> None:
    """Stopped after a tool ran, while the model was called again, then run again with the same
    message (as recovery does): it goes on from the tool's result instead of showing the model
    the user's message a second time. In-process, as the thread's checkpoints are the same as
    after a kill and no second connection waits for the first one's last write."""
    write = ToolCall(name="write_file", arguments={"path": "a.txt", "content": "A"}, id="c_w")
    fake_model.script(Reply(tool_calls=(write,)), Hang(), Reply(text="written"))
    thread = await backend.create_thread()
    task = asyncio.create_task(collect(backend.run(thread, turn("write a"))))
    await received(fake_model, 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    answer = final(await collect(backend.run(thread, turn("write a"))))

    assert answer.text == "written"
    assert roles(fake_model.requests[2]) == ["system", "user", "assistant", "tool"]


async def test_only_a_thread_whose_last_run_did_not_finish_is_read_for_a_left_message(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The crash re-run check reads and decodes the whole thread; a thread whose last run this
    process finished cannot need it. One whose run was cancelled still gets it, in-process too:
    the same text sent again continues from the checkpointed message."""
    graph = backend._graph
    assert graph is not None
    reads: list[object] = []
    real = graph.aget_state

    async def counted(*args: Any, **kwargs: Any) -> Any:
        reads.append(args)
        return await real(*args, **kwargs)

    monkeypatch.setattr(graph, "aget_state", counted)
    thread = await backend.create_thread()
    final(await collect(backend.run(thread, turn("first"))))
    assert len(reads) == 1  # a thread new to this process is checked
    final(await collect(backend.run(thread, turn("second"))))
    assert len(reads) == 1  # settled: not read

    fake_model.script(Hang(), Reply(text="the answer"))
    task = asyncio.create_task(collect(backend.run(thread, turn("third"))))
    await received(fake_model, 3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    answer = final(await collect(backend.run(thread, turn("third"))))
    assert len(reads) == 2  # unsettled by the cancelled run: checked, and found
    assert answer.text == "the answer"
    assert [m["content"] for m in fake_model.requests[3].messages if m["role"] == "user"] == [
        "first",
        "second",
        "third",
    ]


async def test_a_run_cancelled_after_a_tool_step_keeps_a_valid_history(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer
) -> None:
    write = ToolCall(name="write_file", arguments={"path": "a.txt", "content": "A"}, id="c_w")
    fake_model.script(Reply(tool_calls=(write,)), Hang())
    thread = await backend.create_thread()
    task = asyncio.create_task(collect(backend.run(thread, turn("write a"))))
    await received(fake_model, 2)

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    answer = final(await collect(backend.run(thread, turn("and now?"))))

    assert answer.text == "and now?"
    assert roles(fake_model.requests[2]) == ["system", "user", "assistant", "tool", "user"]


async def test_a_question_left_unanswered_does_not_break_the_next_turn(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer
) -> None:
    ask = ToolCall(name="ask_clarification", arguments={"question": "Which?"}, id="call_q")
    fake_model.script(Reply(tool_calls=(ask,)), Reply(text="Moving on."))
    thread = await backend.create_thread()
    await collect(backend.run(thread, turn("do it")))

    answer = final(await collect(backend.run(thread, turn("never mind, something else"))))

    assert answer.text == "Moving on."
    messages = fake_model.requests[1].messages
    assert roles(fake_model.requests[1]) == ["system", "user", "assistant", "tool", "user"]
    assert messages[3] == {
        "role": "tool",
        "tool_call_id": "call_q",
        "content": INTERRUPTED_TOOL_RESULT,
    }


async def test_files_presented_in_an_earlier_turn_are_not_repeated(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer
) -> None:
    write = ToolCall(name="write_file", arguments={"path": "a.txt", "content": "A"})
    present = ToolCall(name="present_files", arguments={"paths": ["a.txt"]})
    fake_model.script(Reply(tool_calls=(write, present)), Reply(text="Here."), Reply(text="Hi."))
    thread = await backend.create_thread()

    first = final(await collect(backend.run(thread, turn("make a"))))
    second = final(await collect(backend.run(thread, turn("hello"))))

    assert [f.name for f in first.files] == ["a.txt"]
    assert second.files == ()


async def test_run_before_start_is_an_agent_error(settings: Settings) -> None:
    backend = EmbeddedBackend(settings)

    with pytest.raises(AgentError) as caught:
        await collect(backend.run("t1", turn("hi")))

    assert caught.value.reason == "The agent is not running."


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        (401, "rejected the API key"),
        (403, "rejected the API key"),
        (429, "rate-limiting"),
        (500, "server error (HTTP 500)"),
        (503, "server error (HTTP 503)"),
        (400, "refused the request (HTTP 400)"),
    ],
)
async def test_model_http_errors_become_agent_errors(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer, status: int, reason: str
) -> None:
    fake_model.script(ErrorReply(status=status, message="Incorrect API key provided: sk-t***"))
    thread = await backend.create_thread()

    with pytest.raises(AgentError) as caught:
        await collect(backend.run(thread, turn("hi")))

    assert reason in caught.value.reason
    assert "Traceback" not in caught.value.reason
    assert "sk-t" not in caught.value.reason
    assert str(status) in caught.value.detail


async def test_unreachable_model_is_an_agent_error(state_dir: Path) -> None:
    with FakeOpenAIServer() as fake:
        base_url = fake.base_url  # the port is closed once the block ends
    async with EmbeddedBackend(model_settings(state_dir, base_url), max_retries=0) as backend:
        thread = await backend.create_thread()
        with pytest.raises(AgentError) as caught:
            await collect(backend.run(thread, turn("hi")))

    assert caught.value.reason == "The model endpoint could not be reached."
    assert "Connection" in caught.value.detail


async def test_a_model_that_never_answers_times_out(
    settings: Settings, fake_model: FakeOpenAIServer
) -> None:
    fake_model.script(Hang())
    async with EmbeddedBackend(settings, max_retries=0, request_timeout_s=0.2) as backend:
        thread = await backend.create_thread()
        with pytest.raises(AgentError) as caught:
            await collect(backend.run(thread, turn("hi")))

    assert caught.value.reason == "The model did not answer in time."


async def test_rate_limit_is_retried_before_giving_up(
    settings: Settings, fake_model: FakeOpenAIServer
) -> None:
    fake_model.script(ErrorReply(status=429, headers={"retry-after-ms": "10"}), Reply(text="ok"))
    async with EmbeddedBackend(settings, max_retries=2) as backend:
        thread = await backend.create_thread()
        answer = final(await collect(backend.run(thread, turn("hi"))))

    assert answer.text == "ok"
    assert len(fake_model.requests) == 2


async def test_a_failed_turn_leaves_the_thread_usable(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer
) -> None:
    fake_model.script(ErrorReply(status=500))
    thread = await backend.create_thread()
    with pytest.raises(AgentError):
        await collect(backend.run(thread, turn("first")))

    answer = final(await collect(backend.run(thread, turn("second"))))

    assert answer.text == "second"


async def test_description_names_the_model_and_endpoint(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer
) -> None:
    assert "fake-model" in backend.description
    assert fake_model.base_url in backend.description
    assert "sk-test" not in backend.description


async def test_checkpoints_are_written_as_durably_as_the_store(state_dir: Path) -> None:
    """WAL with ``synchronous=NORMAL`` (1), like the daemon's own store: not an fsync per
    checkpoint (SQLite's default ``FULL``, 2)."""
    async with checkpointer(StoreSettings(), state_dir) as saver:
        assert isinstance(saver, AsyncSqliteSaver)
        async with saver.conn.execute("PRAGMA synchronous") as cursor:
            assert await cursor.fetchone() == (1,)
        async with saver.conn.execute("PRAGMA journal_mode") as cursor:
            assert await cursor.fetchone() == ("wal",)
