"""Approvals in the embedded graph: LangChain's human-in-the-loop middleware in front of the
gated tools, its interrupt as an ``ApprovalRequest``, the decisions resuming it (design §24).

``write_file`` is gated; its file in the thread's workspace shows whether (and with what) it ran.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent.embedded import EmbeddedBackend
from agent.graph import INTERRUPTED_TOOL_RESULT
from bot.approvals.config import ToolApproval
from bot.config.settings import Settings
from bot.errors import AgentError
from bot.ports import FinalAnswer
from bot.ports.agent import ActionRequest, ApprovalRequest, Decision
from bot.workspace import ThreadWorkspace
from tests.agent.support import (
    approval,
    clarification,
    collect,
    decide,
    final,
    model_settings,
    received,
    tool_names,
    tool_results,
    turn,
)
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall

WRITE = ToolCall(name="write_file", arguments={"path": "out.csv", "content": "a,b"}, id="c_write")
SECOND = ToolCall(name="write_file", arguments={"path": "b.txt", "content": "B"}, id="c_second")
LIST = ToolCall(name="list_files", id="c_list")
APPROVE = Decision(type="approve")


@pytest.fixture
def gated_settings(state_dir: Path, fake_model: FakeOpenAIServer) -> Settings:
    return model_settings(state_dir, fake_model.base_url, gated={"write_file": ToolApproval()})


@pytest.fixture
async def gated(gated_settings: Settings) -> AsyncIterator[EmbeddedBackend]:
    async with EmbeddedBackend(gated_settings, max_retries=0) as started:
        yield started


def outputs(state_dir: Path, thread: str) -> Path:
    return ThreadWorkspace.for_thread(state_dir, thread).outputs


async def paused(backend: EmbeddedBackend, fake: FakeOpenAIServer, *calls: ToolCall) -> str:
    """A thread whose run waits for decisions on ``calls`` (the model's one reply)."""
    fake.script(Reply(tool_calls=calls))
    thread = await backend.create_thread()
    approval(await collect(backend.run(thread, turn("write it"))))
    return thread


async def test_a_gated_call_waits_for_a_decision_before_it_runs(
    gated: EmbeddedBackend, fake_model: FakeOpenAIServer, state_dir: Path
) -> None:
    fake_model.script(Reply(text="Writing.", tool_calls=(WRITE,)))
    thread = await gated.create_thread()

    events = await collect(gated.run(thread, turn("export")))

    args = json.dumps({"content": "a,b", "path": "out.csv"}, sort_keys=True)
    description = "The agent wants to run write_file (arguments: content, path)."
    assert approval(events) == ApprovalRequest(
        actions=(ActionRequest(name="write_file", args=args, description=description),)
    )
    assert tool_names(events) == ["write_file"]
    assert not (outputs(state_dir, thread) / "out.csv").exists()
    assert len(fake_model.requests) == 1


async def test_approve_runs_the_call_once_with_its_own_arguments(
    gated: EmbeddedBackend, fake_model: FakeOpenAIServer, state_dir: Path
) -> None:
    thread = await paused(gated, fake_model, WRITE)
    fake_model.script(Reply(text="Done."))

    answer = final(await collect(gated.run(thread, decide(APPROVE))))

    assert answer.text == "Done."
    assert (outputs(state_dir, thread) / "out.csv").read_text() == "a,b"
    after = (await received(fake_model, 2))[1]
    assert list(tool_results(after)) == ["c_write"]
    assert "out.csv" in tool_results(after)["c_write"]


async def test_edit_runs_the_call_with_the_edited_arguments(
    gated: EmbeddedBackend, fake_model: FakeOpenAIServer, state_dir: Path
) -> None:
    thread = await paused(gated, fake_model, WRITE)
    fake_model.script(Reply(text="Done."))
    edited = json.dumps({"path": "edited.csv", "content": "x,y"})

    final(await collect(gated.run(thread, decide(Decision(type="edit", args=edited)))))

    assert (outputs(state_dir, thread) / "edited.csv").read_text() == "x,y"
    assert not (outputs(state_dir, thread) / "out.csv").exists()
    result = tool_results((await received(fake_model, 2))[1])["c_write"]
    assert "human reviewer replaced this tool call" in result
    assert "edited.csv" in result


async def test_reject_never_runs_the_call_and_the_model_reads_why(
    gated: EmbeddedBackend, fake_model: FakeOpenAIServer, state_dir: Path
) -> None:
    thread = await paused(gated, fake_model, WRITE)
    fake_model.script(Reply(text="Understood."))
    no = Decision(type="reject", message="not into shared folders")

    answer = final(await collect(gated.run(thread, decide(no))))

    assert answer.text == "Understood."
    assert not outputs(state_dir, thread).exists() or not any(outputs(state_dir, thread).iterdir())
    result = tool_results((await received(fake_model, 2))[1])["c_write"]
    assert "not into shared folders" in result


async def test_two_calls_in_one_request_each_get_their_decision(
    gated: EmbeddedBackend, fake_model: FakeOpenAIServer, state_dir: Path
) -> None:
    thread = await paused(gated, fake_model, WRITE, SECOND)
    fake_model.script(Reply(text="Half done."))

    final(await collect(gated.run(thread, decide(Decision(type="reject"), APPROVE))))

    assert not (outputs(state_dir, thread) / "out.csv").exists()
    assert (outputs(state_dir, thread) / "b.txt").read_text() == "B"
    results = tool_results((await received(fake_model, 2))[1])
    assert "User rejected the tool call for `write_file`" in results["c_write"]
    assert "b.txt" in results["c_second"]


async def test_an_ungated_call_of_the_same_reply_waits_with_it_and_runs_unasked(
    gated: EmbeddedBackend, fake_model: FakeOpenAIServer
) -> None:
    fake_model.script(Reply(tool_calls=(LIST, WRITE)))
    thread = await gated.create_thread()

    request = approval(await collect(gated.run(thread, turn("look, then write"))))
    fake_model.script(Reply(text="Done."))
    final(await collect(gated.run(thread, decide(APPROVE))))

    assert [action.name for action in request.actions] == ["write_file"]
    assert list(tool_results((await received(fake_model, 2))[1])) == ["c_list", "c_write"]


async def test_an_approved_call_is_not_run_again_when_a_later_question_is_answered(
    gated: EmbeddedBackend, fake_model: FakeOpenAIServer, state_dir: Path
) -> None:
    ask = ToolCall(name="ask_clarification", arguments={"question": "Also JSON?"}, id="c_ask")
    thread = await paused(gated, fake_model, WRITE, ask)
    fake_model.script(Reply(text="Both done."))

    asked = clarification(await collect(gated.run(thread, decide(APPROVE))))
    written = (outputs(state_dir, thread) / "out.csv").read_text()
    (outputs(state_dir, thread) / "out.csv").write_text("changed since")
    answer = final(await collect(gated.run(thread, turn("yes", answer="yes"))))

    assert (asked.question, written) == ("Also JSON?", "a,b")
    assert answer.text == "Both done."
    assert (outputs(state_dir, thread) / "out.csv").read_text() == "changed since"
    results = tool_results((await received(fake_model, 2))[1])
    assert results["c_ask"] == "The user answered: yes"
    assert "out.csv" in results["c_write"]


async def test_decisions_with_nothing_pending_change_nothing(
    gated: EmbeddedBackend, fake_model: FakeOpenAIServer, state_dir: Path
) -> None:
    thread = await paused(gated, fake_model, WRITE)
    fake_model.script(Reply(text="Done."))
    final(await collect(gated.run(thread, decide(APPROVE))))
    (outputs(state_dir, thread) / "out.csv").write_text("changed since")

    again = await collect(gated.run(thread, decide(APPROVE)))
    fresh = await collect(gated.run(await gated.create_thread(), decide(APPROVE)))

    assert again == [FinalAnswer(text="")]
    assert fresh == [FinalAnswer(text="")]
    assert len(fake_model.requests) == 2
    assert (outputs(state_dir, thread) / "out.csv").read_text() == "changed since"


async def test_a_pending_request_survives_a_restart(
    gated_settings: Settings, fake_model: FakeOpenAIServer, state_dir: Path
) -> None:
    fake_model.script(Reply(tool_calls=(WRITE,)), Reply(text="Done after the restart."))
    async with EmbeddedBackend(gated_settings) as first:
        thread = await first.create_thread()
        approval(await collect(first.run(thread, turn("export"))))

    async with EmbeddedBackend(gated_settings) as second:
        answer = final(await collect(second.run(thread, decide(APPROVE))))

    assert answer.text == "Done after the restart."
    assert (outputs(state_dir, thread) / "out.csv").read_text() == "a,b"


async def test_a_message_instead_of_decisions_closes_the_call_unrun(
    gated: EmbeddedBackend, fake_model: FakeOpenAIServer, state_dir: Path
) -> None:
    thread = await paused(gated, fake_model, WRITE)
    fake_model.script(Reply(text="Fine, never mind."))

    answer = final(await collect(gated.run(thread, turn("forget it", answer="forget it"))))

    assert answer.text == "Fine, never mind."
    assert not (outputs(state_dir, thread) / "out.csv").exists()
    after = (await received(fake_model, 2))[1]
    assert tool_results(after) == {"c_write": INTERRUPTED_TOOL_RESULT}
    assert after.messages[-1] == {"role": "user", "content": "forget it"}


async def test_only_the_configured_decisions_are_offered_and_accepted(
    state_dir: Path, fake_model: FakeOpenAIServer
) -> None:
    only = ToolApproval(decisions=("approve", "reject"))
    settings = model_settings(state_dir, fake_model.base_url, gated={"write_file": only})
    async with EmbeddedBackend(settings, max_retries=0) as backend:
        fake_model.script(Reply(tool_calls=(WRITE,)))
        thread = await backend.create_thread()
        request = approval(await collect(backend.run(thread, turn("export"))))
        edit = Decision(type="edit", args=json.dumps({"path": "x", "content": "y"}))

        with pytest.raises(AgentError) as caught:
            await collect(backend.run(thread, decide(edit)))

    assert request.actions[0].allowed == ("approve", "reject")
    assert caught.value.reason == "That decision is not allowed for this action."
    assert not outputs(state_dir, thread).exists() or not any(outputs(state_dir, thread).iterdir())


@pytest.mark.parametrize(
    ("decisions", "reason"),
    [
        ((APPROVE, APPROVE), "The decisions do not match the request waiting for them."),
        ((Decision(type="edit", args="{not json"),), "The edited arguments are not valid JSON."),
        ((Decision(type="edit", args="[1, 2]"),), "The edited arguments must be a JSON object."),
        ((Decision(type="edit"),), "An edit needs the new arguments."),
    ],
)
async def test_unusable_decisions_are_refused_and_the_request_stays_pending(
    gated: EmbeddedBackend,
    fake_model: FakeOpenAIServer,
    state_dir: Path,
    decisions: tuple[Decision, ...],
    reason: str,
) -> None:
    thread = await paused(gated, fake_model, WRITE)

    with pytest.raises(AgentError) as caught:
        await collect(gated.run(thread, decide(*decisions)))
    fake_model.script(Reply(text="Done."))
    final(await collect(gated.run(thread, decide(APPROVE))))

    assert caught.value.reason == reason
    assert (outputs(state_dir, thread) / "out.csv").read_text() == "a,b"
