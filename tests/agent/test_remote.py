"""The remote backend end to end against a real ``langgraph dev`` server (design §6, §7).

One server per module serves this repo's graph against a module-wide fake model; each test
scripts the model and only looks at the requests it caused.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from pathlib import Path

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from agent.remote import RemoteBackend
from bot.cli.probes import run_probes
from bot.errors import AgentError
from bot.ports import AgentEvent, ClarificationRequest, PresentedFile, TextDelta, ToolActivity
from bot.ports.agent import ModelUsage
from bot.workspace import ThreadWorkspace
from tests.agent.support import (
    SYSTEM_PROMPT,
    clarification,
    collect,
    final,
    received,
    remote_settings,
    roles,
    streamed_text,
    tool_names,
    tool_results,
    turn,
)
from tests.fakes.langgraph_server import LangGraphDevServer, free_port
from tests.fakes.openai_server import (
    ErrorReply,
    FakeOpenAIServer,
    Hang,
    ReceivedRequest,
    Reply,
    ToolCall,
)

ASK = ToolCall(
    name="ask_clarification",
    arguments={"question": "Which format?", "options": ["CSV", "JSON"]},
    id="call_ask",
)
LIST = ToolCall(name="list_files", id="call_list")
REPORT = "# Report\n\nremote ünïcödé\n"


@pytest.fixture(scope="module")
def remote_model() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture(scope="module")
def server_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("server-state")


@pytest.fixture(scope="module")
def langgraph_server(
    remote_model: FakeOpenAIServer, server_state: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LangGraphDevServer]:
    env = {
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": remote_model.base_url,
        "OPENAI_MODEL": "fake-model",
        "SWITCHBOARD_STATE_DIR": str(server_state),
        "SWITCHBOARD_SYSTEM_PROMPT": SYSTEM_PROMPT,
    }
    with LangGraphDevServer(tmp_path_factory.mktemp("langgraph"), env) as server:
        yield server


@pytest.fixture
async def remote(
    langgraph_server: LangGraphDevServer, server_state: Path
) -> AsyncIterator[RemoteBackend]:
    """A backend sharing the server's state dir (as a ``langgraph dev`` on this machine)."""
    async with RemoteBackend(remote_settings(langgraph_server.url, server_state)) as backend:
        yield backend


@pytest.fixture
async def sdk(langgraph_server: LangGraphDevServer) -> AsyncIterator[LangGraphClient]:
    """An independent client to look at the server's runs."""
    client = get_client(url=langgraph_server.url, api_key=None)
    yield client
    await client.aclose()


async def requests_since(fake: FakeOpenAIServer, base: int, count: int) -> list[ReceivedRequest]:
    return (await received(fake, base + count))[base:]


def contents(request: ReceivedRequest) -> list[str]:
    return [str(message.get("content") or "") for message in request.messages]


# --------------------------------------------------------------------------- lifecycle


async def test_start_names_the_url_when_the_server_is_unreachable(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    backend = RemoteBackend(remote_settings(url, tmp_path), connect_retries=0)

    with pytest.raises(AgentError) as caught:
        await backend.start()
    await backend.aclose()

    assert url in caught.value.reason
    assert "ConnectError" in caught.value.detail


async def test_start_refuses_an_unknown_assistant(
    langgraph_server: LangGraphDevServer, tmp_path: Path
) -> None:
    settings = remote_settings(langgraph_server.url, tmp_path, assistant="no-such-graph")

    with pytest.raises(AgentError) as caught:
        async with RemoteBackend(settings):
            pass

    assert "'no-such-graph'" in caught.value.reason
    assert langgraph_server.url in caught.value.reason


async def test_start_accepts_an_assistant_by_uuid(
    langgraph_server: LangGraphDevServer, sdk: LangGraphClient, tmp_path: Path
) -> None:
    [assistant] = await sdk.assistants.search(graph_id="agent", limit=1)
    known = str(assistant["assistant_id"])
    unknown = "00000000-0000-4000-8000-000000000000"

    async with RemoteBackend(remote_settings(langgraph_server.url, tmp_path, assistant=known)):
        pass
    with pytest.raises(AgentError) as caught:
        async with RemoteBackend(
            remote_settings(langgraph_server.url, tmp_path, assistant=unknown)
        ):
            pass

    assert unknown in caught.value.reason


async def test_description_names_server_and_assistant(tmp_path: Path) -> None:
    backend = RemoteBackend(remote_settings("http://127.0.0.1:2024/", tmp_path))

    assert (
        backend.description == "remote LangGraph server at http://127.0.0.1:2024 (assistant agent)"
    )
    with pytest.raises(AgentError) as caught:
        await backend.create_thread()
    assert caught.value.reason == "The agent is not running."


# --------------------------------------------------------------------------- turns


async def test_two_turns_share_the_server_thread(
    remote: RemoteBackend, remote_model: FakeOpenAIServer
) -> None:
    base = len(remote_model.requests)
    remote_model.script(Reply(text="Hello Ada, nice to meet you."), Reply(text="Still here."))
    thread = await remote.create_thread()

    first = await collect(remote.run(thread, turn("hello")))
    second = await collect(remote.run(thread, turn("again", notes=("a file was too big",))))

    assert final(first).text == "Hello Ada, nice to meet you."
    assert streamed_text(first) == final(first).text
    assert len([e for e in first if isinstance(e, TextDelta)]) > 1, "tokens are streamed"
    assert final(second).text == "Still here."
    later = (await requests_since(remote_model, base, 2))[1]
    assert roles(later) == ["system", "user", "assistant", "user"]
    assert contents(later)[:3] == [SYSTEM_PROMPT, "hello", "Hello Ada, nice to meet you."]
    assert contents(later)[3] == "again\n\n[Note: a file was too big]"


async def test_text_and_tool_activity_across_model_calls(
    remote: RemoteBackend, remote_model: FakeOpenAIServer
) -> None:
    remote_model.script(Reply(text="Let me look.", tool_calls=(LIST,)), Reply(text="Nothing yet."))
    thread = await remote.create_thread()

    events = await collect(remote.run(thread, turn("what files do I have?")))

    assert tool_names(events) == ["list_files"]
    assert final(events).text == "Let me look.\n\nNothing yet."
    assert streamed_text(events) == final(events).text


async def test_a_question_is_asked_and_the_answer_resumes_the_run(
    remote: RemoteBackend, remote_model: FakeOpenAIServer, sdk: LangGraphClient
) -> None:
    base = len(remote_model.requests)
    remote_model.script(Reply(text="One moment.", tool_calls=(ASK,)), Reply(text="JSON it is."))
    thread = await remote.create_thread()

    asked = await collect(remote.run(thread, turn("export my data")))

    assert clarification(asked) == ClarificationRequest(
        question="Which format?", options=("CSV", "JSON")
    )
    assert tool_names(asked) == ["ask_clarification"]
    assert (await sdk.threads.get(thread))["status"] == "interrupted"

    answered = await collect(remote.run(thread, turn("JSON", answer="JSON")))

    assert final(answered).text == "JSON it is."
    resumed = (await requests_since(remote_model, base, 2))[1]
    assert roles(resumed) == ["system", "user", "assistant", "tool"]
    assert tool_results(resumed) == {"call_ask": "The user answered: JSON"}


async def test_an_answer_with_nothing_pending_is_sent_as_a_message(
    remote: RemoteBackend, remote_model: FakeOpenAIServer
) -> None:
    base = len(remote_model.requests)
    remote_model.script(Reply(text="Noted."))
    thread = await remote.create_thread()

    events = await collect(remote.run(thread, turn("", answer="CSV")))

    assert final(events).text == "Noted."
    request = (await requests_since(remote_model, base, 1))[0]
    assert contents(request)[-1] == "CSV"


# --------------------------------------------------------------------------- stopping


async def _run_until_the_model_hangs(
    remote: RemoteBackend, remote_model: FakeOpenAIServer, thread: str
) -> tuple[AsyncIterator[AgentEvent], int]:
    """Start a turn whose second model call never answers; return once it is hanging.

    The first model call's tool activity has reached us by then, so the run id is known.
    """
    base = len(remote_model.requests)
    remote_model.script(Reply(tool_calls=(LIST,)), Hang())
    events = remote.run(thread, turn("slow work"))
    first = await anext(events)
    assert isinstance(first, ModelUsage)
    assert await anext(events) == ToolActivity(name="list_files")
    await requests_since(remote_model, base, 2)
    return events, base


async def _only_run(sdk: LangGraphClient, thread: str) -> tuple[str, str]:
    runs = await sdk.runs.list(thread)
    assert len(runs) == 1
    return str(runs[0]["run_id"]), str(runs[0]["status"])


async def test_cancelling_the_consuming_task_cancels_the_server_run(
    remote: RemoteBackend, remote_model: FakeOpenAIServer, sdk: LangGraphClient
) -> None:
    thread = await remote.create_thread()
    events, base = await _run_until_the_model_hangs(remote, remote_model, thread)
    consumer = asyncio.create_task(collect(events), name="test:consume")
    assert (await _only_run(sdk, thread))[1] == "running"

    consumer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await consumer

    assert (await _only_run(sdk, thread))[1] == "interrupted"
    remote_model.script(Reply(text="Fresh start."))
    after = await collect(remote.run(thread, turn("next")))
    assert final(after).text == "Fresh start."
    request = (await requests_since(remote_model, base, 3))[2]
    assert roles(request) == ["system", "user", "assistant", "tool", "user"]


async def test_cancel_stops_the_running_turn_on_the_server(
    remote: RemoteBackend, remote_model: FakeOpenAIServer, sdk: LangGraphClient
) -> None:
    thread = await remote.create_thread()
    events, _ = await _run_until_the_model_hangs(remote, remote_model, thread)

    await remote.cancel(thread)

    assert (await _only_run(sdk, thread))[1] == "interrupted"
    with pytest.raises(AgentError) as caught:
        await anext(events)
    assert caught.value.reason == "The run was stopped before it finished."
    remote_model.script(Reply(text="Ready again."))
    assert final(await collect(remote.run(thread, turn("next")))).text == "Ready again."


async def test_closing_the_event_stream_early_cancels_the_server_run(
    remote: RemoteBackend, remote_model: FakeOpenAIServer, sdk: LangGraphClient
) -> None:
    thread = await remote.create_thread()
    events, _ = await _run_until_the_model_hangs(remote, remote_model, thread)
    assert isinstance(events, AsyncGenerator)

    await events.aclose()

    assert (await _only_run(sdk, thread))[1] == "interrupted"


async def test_cancel_without_a_run_does_nothing(remote: RemoteBackend) -> None:
    thread = await remote.create_thread()

    await remote.cancel(thread)


# --------------------------------------------------------------------------- errors


async def test_a_run_that_fails_on_the_server_raises_agent_error(
    remote: RemoteBackend, remote_model: FakeOpenAIServer
) -> None:
    remote_model.script(ErrorReply(status=401, message="bad key"))
    thread = await remote.create_thread()

    with pytest.raises(AgentError) as caught:
        await collect(remote.run(thread, turn("hello")))

    assert caught.value.reason == "The model provider rejected the API key."
    assert "AuthenticationError" in caught.value.detail


async def test_an_http_error_from_the_server_raises_agent_error(
    remote: RemoteBackend, langgraph_server: LangGraphDevServer
) -> None:
    with pytest.raises(AgentError) as caught:
        await collect(remote.run("not-a-uuid", turn("hello")))

    assert langgraph_server.url in caught.value.reason
    assert "refused the request (HTTP 4" in caught.value.reason


# --------------------------------------------------------------------------- files


def _file_script() -> tuple[Reply, ...]:
    write = ToolCall(name="write_file", arguments={"path": "report.md", "content": REPORT})
    present = ToolCall(name="present_files", arguments={"paths": ["report.md"]})
    return (Reply(tool_calls=(write,)), Reply(tool_calls=(present,)), Reply(text="Here it is."))


async def test_files_presented_in_a_shared_state_dir_are_delivered(
    remote: RemoteBackend, remote_model: FakeOpenAIServer, server_state: Path
) -> None:
    remote_model.script(*_file_script())
    thread = await remote.create_thread()

    answer = final(await collect(remote.run(thread, turn("write a report"))))

    outputs = ThreadWorkspace.for_thread(server_state, thread).outputs
    assert answer.text == "Here it is."
    assert answer.files == (PresentedFile(path=outputs / "report.md", name="report.md"),)
    assert answer.files[0].path.read_bytes() == REPORT.encode()


async def test_files_kept_on_another_machine_are_named_in_the_text(
    langgraph_server: LangGraphDevServer, remote_model: FakeOpenAIServer, tmp_path: Path
) -> None:
    remote_model.script(*_file_script())
    settings = remote_settings(langgraph_server.url, tmp_path / "elsewhere")
    async with RemoteBackend(settings) as backend:
        thread = await backend.create_thread()
        events = await collect(backend.run(thread, turn("write a report")))

    answer = final(events)
    assert answer.files == ()
    assert answer.text == (
        "Here it is.\n\n(Files kept on the agent server, not sent here: outputs/report.md)"
    )
    assert streamed_text(events) == answer.text


async def test_online_check_probes_the_server(
    langgraph_server: LangGraphDevServer, tmp_path: Path
) -> None:
    settings = remote_settings(langgraph_server.url, tmp_path)
    settings = settings.model_copy(
        update={"agent": settings.agent.model_copy(update={"backend": "remote"})}
    )
    (result,) = await run_probes(settings)
    assert result.ok, result.detail
    assert result.detail.endswith("assistant agent found")
    unreachable = remote_settings(f"http://127.0.0.1:{free_port()}", tmp_path)
    unreachable = unreachable.model_copy(
        update={"agent": unreachable.agent.model_copy(update={"backend": "remote"})}
    )
    (failed,) = await run_probes(unreachable)
    assert not failed.ok
    assert "Could not reach" in failed.detail
