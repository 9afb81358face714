"""Approvals through a real ``langgraph dev``: the interrupt of LangChain's human-in-the-loop
middleware becomes an ``ApprovalRequest`` and the decisions resume it, for our own graph
(``SWITCHBOARD_APPROVAL_TOOLS``) and for one built with LangChain's ``create_agent`` (design §24).

The server shares its state dir with the backend, so ``write_file``'s file shows whether (and
with what) the gated call ran.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent.remote import RemoteBackend
from bot.ports import FinalAnswer
from bot.ports.agent import ActionRequest, ApprovalRequest, Decision
from bot.workspace import ThreadWorkspace
from tests.agent.support import (
    approval,
    collect,
    decide,
    final,
    received,
    remote_settings,
    tool_results,
    turn,
)
from tests.fakes.langgraph_server import LangGraphDevServer
from tests.fakes.openai_server import FakeOpenAIServer, ReceivedRequest, Reply, ToolCall

WRITE = ToolCall(name="write_file", arguments={"path": "out.csv", "content": "a,b"}, id="c_write")
SECOND = ToolCall(name="write_file", arguments={"path": "b.txt", "content": "B"}, id="c_second")
APPROVE = Decision(type="approve")


DESCRIPTIONS = {
    "agent": "The agent wants to run write_file (arguments: content, path).",
    "hitl": "Tool execution requires approval\n\nTool: write_file\n"
    "Args: {'path': 'out.csv', 'content': 'a,b'}",
}
"""Ours names the arguments, not their values; LangChain's default shows them."""


@pytest.fixture(params=["agent", "hitl"])
def graph(request: pytest.FixtureRequest) -> str:
    """Our graph (``agent``) or ``create_agent``'s (``hitl``)."""
    return str(request.param)


@pytest.fixture
async def remote(
    graph: str, gated_server: LangGraphDevServer, gated_server_state: Path
) -> AsyncIterator[RemoteBackend]:
    settings = remote_settings(gated_server.url, gated_server_state, assistant=graph)
    async with RemoteBackend(settings) as backend:
        yield backend


def outputs(state_dir: Path, thread: str) -> Path:
    return ThreadWorkspace.for_thread(state_dir, thread).outputs


async def requests_since(fake: FakeOpenAIServer, base: int, count: int) -> list[ReceivedRequest]:
    return (await received(fake, base + count))[base:]


async def paused(remote: RemoteBackend, fake: FakeOpenAIServer, *calls: ToolCall) -> str:
    """A server thread whose run waits for decisions on ``calls`` (the model's one reply)."""
    fake.script(Reply(tool_calls=calls))
    thread = await remote.create_thread()
    approval(await collect(remote.run(thread, turn("write it"))))
    return thread


async def test_a_gated_call_pauses_the_run_with_an_approval_request(
    remote: RemoteBackend, graph: str, gated_model: FakeOpenAIServer, gated_server_state: Path
) -> None:
    base = len(gated_model.requests)
    gated_model.script(Reply(tool_calls=(WRITE,)))
    thread = await remote.create_thread()

    request = approval(await collect(remote.run(thread, turn("export"))))

    args = json.dumps({"content": "a,b", "path": "out.csv"}, sort_keys=True)
    action = ActionRequest(name="write_file", args=args, description=DESCRIPTIONS[graph])
    assert request == ApprovalRequest(actions=(action,))
    assert not (outputs(gated_server_state, thread) / "out.csv").exists()
    assert len(gated_model.requests) == base + 1


async def test_approve_runs_the_call_and_the_paused_text_is_not_repeated(
    remote: RemoteBackend, gated_model: FakeOpenAIServer, gated_server_state: Path
) -> None:
    gated_model.script(Reply(text="Writing it now.", tool_calls=(WRITE,)), Reply(text="Done."))
    thread = await remote.create_thread()
    asked = await collect(remote.run(thread, turn("export")))

    answer = final(await collect(remote.run(thread, decide(APPROVE))))

    assert approval(asked).actions[0].name == "write_file"
    assert answer.text == "Done."
    assert (outputs(gated_server_state, thread) / "out.csv").read_text() == "a,b"


async def test_edit_runs_the_call_with_the_edited_arguments(
    remote: RemoteBackend, gated_model: FakeOpenAIServer, gated_server_state: Path
) -> None:
    thread = await paused(remote, gated_model, WRITE)
    gated_model.script(Reply(text="Done."))
    edited = json.dumps({"path": "edited.csv", "content": "x,y"})

    final(await collect(remote.run(thread, decide(Decision(type="edit", args=edited)))))

    assert (outputs(gated_server_state, thread) / "edited.csv").read_text() == "x,y"
    assert not (outputs(gated_server_state, thread) / "out.csv").exists()


async def test_reject_never_runs_the_call_and_the_model_reads_why(
    remote: RemoteBackend, gated_model: FakeOpenAIServer, gated_server_state: Path
) -> None:
    thread = await paused(remote, gated_model, WRITE)
    base = len(gated_model.requests)
    gated_model.script(Reply(text="Understood."))

    answer = final(await collect(remote.run(thread, decide(Decision(type="reject", message="no")))))

    assert answer.text == "Understood."
    assert not (outputs(gated_server_state, thread) / "out.csv").exists()
    after = (await requests_since(gated_model, base, 1))[0]
    assert tool_results(after)["c_write"].endswith("with reason: no")


async def test_two_calls_in_one_request_each_get_their_decision(
    remote: RemoteBackend, gated_model: FakeOpenAIServer, gated_server_state: Path
) -> None:
    thread = await paused(remote, gated_model, WRITE, SECOND)
    gated_model.script(Reply(text="Half done."))

    final(await collect(remote.run(thread, decide(Decision(type="reject"), APPROVE))))

    assert not (outputs(gated_server_state, thread) / "out.csv").exists()
    assert (outputs(gated_server_state, thread) / "b.txt").read_text() == "B"


async def test_decisions_with_nothing_pending_start_no_run(
    remote: RemoteBackend, gated_model: FakeOpenAIServer
) -> None:
    thread = await paused(remote, gated_model, WRITE)
    gated_model.script(Reply(text="Done."))
    final(await collect(remote.run(thread, decide(APPROVE))))
    base = len(gated_model.requests)

    again = await collect(remote.run(thread, decide(APPROVE)))
    fresh = await collect(remote.run(await remote.create_thread(), decide(APPROVE)))

    assert again == [FinalAnswer(text="")]
    assert fresh == [FinalAnswer(text="")]
    assert len(gated_model.requests) == base
