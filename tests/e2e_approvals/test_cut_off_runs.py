"""Decisions replayed on a run they already resumed (design §11, §24), in the embedded backend:
a run stopped after its approved call ran goes on from its checkpoint, answering once without
running the call again; decisions on a thread that waits for a question change nothing. (The
kill -9 itself is in ``test_kill9.py``.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.embedded import EmbeddedBackend
from bot.approvals.config import ToolApproval
from bot.errors import AgentError
from bot.ports import ClarificationRequest
from bot.ports.agent import Decision
from tests.agent.support import (
    approval,
    clarification,
    collect,
    decide,
    final,
    model_settings,
    turn,
)
from tests.e2e_approvals.support import model_requests, tool_results, write, written
from tests.fakes.openai_server import ErrorReply, FakeOpenAIServer, Reply, ToolCall

APPROVE = Decision(type="approve")


async def test_a_run_stopped_after_the_approved_call_goes_on_without_running_it_again(
    tmp_path: Path,
) -> None:
    """The model fails right after the approved call ran (where a crash would also leave the
    run: the call's result checkpointed, the model not yet answered); the decisions, replayed
    on a fresh backend as after a restart, continue the run instead of doing nothing."""
    with FakeOpenAIServer() as model:
        settings = model_settings(tmp_path, model.base_url, gated={"write_file": ToolApproval()})
        model.script(Reply(tool_calls=(write("a.txt", "alpha", "call_a"),)), ErrorReply(status=500))
        async with EmbeddedBackend(settings, max_retries=0) as first:
            thread = await first.create_thread()
            approval(await collect(first.run(thread, turn("write a.txt"))))
            with pytest.raises(AgentError):
                await collect(first.run(thread, decide(APPROVE)))
        (tmp_path / "threads" / thread / "outputs" / "a.txt").write_text("changed since")
        model.script(Reply(text="Saved."))
        async with EmbeddedBackend(settings, max_retries=0) as second:
            answer = final(await collect(second.run(thread, decide(APPROVE))))
            again = await collect(second.run(thread, decide(APPROVE)))
        requests = await model_requests(model, 3)
    assert answer.text == "Saved."
    assert written(tmp_path, "a.txt") == ["changed since"]
    assert "Wrote outputs/a.txt" in tool_results(requests[2])["call_a"]
    assert len(model.requests) == 3
    assert [type(event).__name__ for event in again] == ["FinalAnswer"]


async def test_decisions_on_a_thread_waiting_for_a_question_change_nothing(
    tmp_path: Path,
) -> None:
    ask = ToolCall(name="ask_clarification", arguments={"question": "Which file?"}, id="c_ask")
    with FakeOpenAIServer() as model:
        settings = model_settings(tmp_path, model.base_url, gated={"write_file": ToolApproval()})
        model.script(Reply(tool_calls=(ask,)), Reply(text="a.txt it is."))
        async with EmbeddedBackend(settings, max_retries=0) as backend:
            thread = await backend.create_thread()
            asked = clarification(await collect(backend.run(thread, turn("write something"))))
            late = await collect(backend.run(thread, decide(APPROVE)))
            answer = final(await collect(backend.run(thread, turn("a.txt", answer="a.txt"))))
    assert asked.question == "Which file?"
    assert not any(isinstance(event, ClarificationRequest) for event in late)
    assert len(model.requests) == 2
    assert answer.text == "a.txt it is."
