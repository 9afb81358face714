"""The graph module: history repair, tool errors, and the ``langgraph dev`` entry point."""

from __future__ import annotations

import importlib
import json
import logging
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from agent.embedded import EmbeddedBackend
from agent.graph import (
    INTERRUPTED_TOOL_RESULT,
    chat_model,
    close_dangling_tool_calls,
    make_graph,
    settings_from_env,
    tool_error_message,
)
from agent.offline_model import OfflineEchoModel
from bot.config.settings import ModelSettings
from tests.agent.support import collect, final, tool_results, turn
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall

REPO = Path(__file__).resolve().parents[2]


def _ai(*call_ids: str) -> AIMessage:
    calls = [{"name": "list_files", "args": {}, "id": i, "type": "tool_call"} for i in call_ids]
    return AIMessage(content="", tool_calls=calls)


def _tool(call_id: str) -> ToolMessage:
    return ToolMessage(content="ok", tool_call_id=call_id)


def test_complete_histories_are_left_alone() -> None:
    history = [HumanMessage(content="hi"), _ai("a", "b"), _tool("a"), _tool("b"), AIMessage("x")]

    assert close_dangling_tool_calls(history) == history


def test_missing_tool_results_are_filled_in_after_the_answered_ones() -> None:
    history = [HumanMessage(content="hi"), _ai("a", "b"), _tool("a"), HumanMessage(content="2")]

    repaired = close_dangling_tool_calls(history)

    assert [type(m).__name__ for m in repaired] == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "ToolMessage",
        "HumanMessage",
    ]
    filled = repaired[3]
    assert isinstance(filled, ToolMessage)
    assert (filled.tool_call_id, filled.content) == ("b", INTERRUPTED_TOOL_RESULT)


def test_a_trailing_unanswered_call_is_closed() -> None:
    repaired = close_dangling_tool_calls([HumanMessage(content="hi"), _ai("a")])

    assert isinstance(repaired[-1], ToolMessage)
    assert repaired[-1].tool_call_id == "a"


def test_an_unexpected_tool_failure_is_logged_and_told_to_the_model(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR, logger="agent.graph"):
        text = tool_error_message(RuntimeError("disk on fire"))

    assert text == "Error: the tool failed unexpectedly (RuntimeError)."
    assert "tool call failed" in caplog.text


async def test_invalid_tool_arguments_are_reported_to_the_model(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer
) -> None:
    bad = ToolCall(name="write_file", arguments={"path": "x.txt"}, id="c_bad")
    fake_model.script(Reply(tool_calls=(bad,)), Reply(text="Let me fix that."))
    thread = await backend.create_thread()

    answer = final(await collect(backend.run(thread, turn("write"))))

    assert answer.text == "Let me fix that."
    result = tool_results(fake_model.requests[1])["c_bad"]
    assert "content" in result
    assert "Field required" in result


def test_langgraph_json_points_at_the_factory() -> None:
    config = json.loads((REPO / "langgraph.json").read_text())

    path, _, name = config["graphs"]["agent"].partition(":")
    module = importlib.import_module(path.removeprefix("./").removesuffix(".py").replace("/", "."))

    assert getattr(module, name) is make_graph
    assert config["dependencies"] == ["."]


async def test_make_graph_without_a_key_uses_the_offline_model(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SWITCHBOARD_STATE_DIR", str(tmp_path))

    graph = make_graph()
    result = await graph.ainvoke(
        {"messages": [HumanMessage(content="hi")]}, {"configurable": {"thread_id": "t1"}}
    )

    assert graph.checkpointer is None
    assert result["messages"][-1].text.endswith("You said: hi")


def test_make_graph_reads_the_model_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_MODEL", "env-model")
    monkeypatch.setenv("SWITCHBOARD_STATE_DIR", str(tmp_path))
    monkeypatch.setenv("SWITCHBOARD_SYSTEM_PROMPT", "Be brief.")

    settings, state_dir, prompt = settings_from_env()
    model = chat_model(settings)

    assert (state_dir, prompt) == (tmp_path, "Be brief.")
    assert isinstance(model, ChatOpenAI)
    assert (model.model_name, model.openai_api_base) == ("env-model", "http://127.0.0.1:9/v1")
    assert model.streaming
    assert make_graph().checkpointer is None


def test_an_endpoint_without_a_key_still_gets_chat_openai() -> None:
    model = chat_model(ModelSettings(base_url="http://127.0.0.1:11434/v1", name="llama3"))

    assert isinstance(model, ChatOpenAI)
    assert isinstance(chat_model(ModelSettings()), OfflineEchoModel)


async def test_the_model_is_async_only_and_sends_the_configured_key() -> None:
    """The graph only calls the model asynchronously: no synchronous OpenAI client (its own
    pool and TLS context) is built, and the key still reaches the endpoint."""
    with FakeOpenAIServer() as server:
        server.script(Reply(text="keyed"))
        settings = ModelSettings(base_url=server.base_url, api_key=SecretStr("sk-kept"))
        model = chat_model(settings)
        assert isinstance(model, ChatOpenAI)
        assert model.root_client is None
        assert model.root_async_client is not None
        answer = await model.ainvoke([HumanMessage("hello")])
        (request,) = server.requests
    assert answer.text == "keyed"
    assert request.authorization == "Bearer sk-kept"
