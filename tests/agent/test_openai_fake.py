"""The fake model server speaks the OpenAI wire format, and faults reach the backend as such."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from agent.embedded import EmbeddedBackend
from bot.errors import AgentError
from tests.agent.support import collect, turn
from tests.fakes.openai_server import (
    Drop,
    ErrorReply,
    FakeOpenAIServer,
    RawReply,
    Reply,
    ToolCall,
    Usage,
)


@pytest.fixture
async def client(fake_model: FakeOpenAIServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=fake_model.base_url, timeout=5) as http:
        yield http


def _body(*, stream: bool, usage: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "fake-model",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hey"}]}],
        "stream": stream,
    }
    if usage:
        body["stream_options"] = {"include_usage": True}
    return body


async def test_models_are_listed(client: httpx.AsyncClient) -> None:
    response = await client.get("/models")

    assert response.json()["data"][0]["id"] == "fake-model"


async def test_non_streaming_completion_with_tool_calls(
    client: httpx.AsyncClient, fake_model: FakeOpenAIServer
) -> None:
    fake_model.script(Reply(text="sure", tool_calls=(ToolCall(name="f", arguments={"a": 1}),)))

    response = await client.post("/chat/completions", json=_body(stream=False))

    choice = response.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] == "sure"
    assert choice["message"]["tool_calls"][0]["function"] == {"name": "f", "arguments": '{"a": 1}'}


async def test_streaming_sends_sse_chunks_and_usage_only_when_asked(
    client: httpx.AsyncClient, fake_model: FakeOpenAIServer
) -> None:
    plain = (await client.post("/chat/completions", json=_body(stream=True))).text
    with_usage = (await client.post("/chat/completions", json=_body(stream=True, usage=True))).text

    events = [line.removeprefix("data: ") for line in plain.split("\n\n") if line]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(event) for event in events[:-1]]
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks) == "hey"
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert '"usage"' not in plain
    assert '"usage"' in with_usage


async def test_usage_is_computed_from_the_request_and_reply_and_recorded(
    client: httpx.AsyncClient, fake_model: FakeOpenAIServer
) -> None:
    fake_model.script(Reply(text="a longer reply than before"), Reply(text="hi", usage=None))

    first = (await client.post("/chat/completions", json=_body(stream=False))).json()
    second = (await client.post("/chat/completions", json=_body(stream=False))).json()

    assert first["usage"] == {
        "prompt_tokens": len("hey") // 4 + 1,
        "completion_tokens": len("a longer reply than before") // 4 + 1,
        "total_tokens": 1 + 7,
        "prompt_tokens_details": {"cached_tokens": 0},
    }
    assert "usage" not in second
    assert fake_model.reported_usage() == [Usage(1, 7, 0), None]


async def test_a_stream_reports_scripted_usage_only_when_asked(
    client: httpx.AsyncClient, fake_model: FakeOpenAIServer
) -> None:
    scripted = Usage(50, 4, 32)
    fake_model.script(Reply(text="x", usage=scripted), Reply(text="x", usage=scripted))

    await client.post("/chat/completions", json=_body(stream=True))
    streamed = (await client.post("/chat/completions", json=_body(stream=True, usage=True))).text

    last = json.loads(streamed.split("\n\n")[-3].removeprefix("data: "))
    assert last["usage"]["prompt_tokens_details"] == {"cached_tokens": 32}
    assert fake_model.reported_usage() == [None, scripted]


async def test_errors_carry_an_openai_error_body(
    client: httpx.AsyncClient, fake_model: FakeOpenAIServer
) -> None:
    fake_model.script(ErrorReply(status=429, message="slow down", headers={"retry-after": "7"}))

    response = await client.post("/chat/completions", json=_body(stream=False))

    assert response.status_code == 429
    assert response.headers["retry-after"] == "7"
    assert response.json()["error"]["message"] == "slow down"


@pytest.mark.parametrize("after_chunks", [0, 3])
async def test_a_dropped_connection_is_an_agent_error(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer, after_chunks: int
) -> None:
    fake_model.script(Drop(after_chunks=after_chunks))
    thread = await backend.create_thread()

    with pytest.raises(AgentError) as caught:
        await collect(backend.run(thread, turn("hi")))

    assert "model endpoint" in caught.value.reason


async def test_a_broken_response_is_a_generic_agent_error(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    fake_model.script(RawReply(body="data: {not json\n\n"))
    thread = await backend.create_thread()

    with (
        caplog.at_level(logging.ERROR, logger="agent.embedded"),
        pytest.raises(AgentError) as caught,
    ):
        await collect(backend.run(thread, turn("hi")))

    assert caught.value.reason == "The agent failed unexpectedly."
    assert "agent run failed" in caplog.text
