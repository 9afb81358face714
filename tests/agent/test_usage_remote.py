"""What each model call used, through a real ``langgraph dev``: one ``ModelUsage`` per model
reply in the ``updates`` stream, from its ``usage_metadata``; unreported counts are unknown."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent.remote import RemoteBackend
from bot.ports.agent import Decision, ModelUsage
from tests.agent.support import (
    approval,
    collect,
    decide,
    final,
    received,
    remote_settings,
    turn,
    usages,
)
from tests.fakes.langgraph_server import LangGraphDevServer
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall, Usage

LIST = ToolCall(name="list_files", id="c_list")
WRITE = ToolCall(name="write_file", arguments={"path": "u.txt", "content": "U"}, id="c_write")


@pytest.fixture
async def remote(
    gated_server: LangGraphDevServer, gated_server_state: Path
) -> AsyncIterator[RemoteBackend]:
    async with RemoteBackend(remote_settings(gated_server.url, gated_server_state)) as backend:
        yield backend


def as_model_usage(reported: Usage | None) -> ModelUsage:
    if reported is None:
        return ModelUsage(model="fake-model", input_tokens=None, output_tokens=None)
    return ModelUsage(
        model="fake-model",
        input_tokens=reported.prompt,
        output_tokens=reported.completion,
        cached_tokens=reported.cached,
    )


async def reported_since(fake: FakeOpenAIServer, base: int, count: int) -> list[Usage | None]:
    await received(fake, base + count)
    return fake.reported_usage()[base:]


async def test_each_model_call_reports_what_the_provider_said_it_used(
    remote: RemoteBackend, gated_model: FakeOpenAIServer
) -> None:
    base = len(gated_model.reported_usage())
    gated_model.script(
        Reply(tool_calls=(LIST,), usage=Usage(300, 12, 256)), Reply(text="Nothing there.")
    )
    thread = await remote.create_thread()

    events = await collect(remote.run(thread, turn("what files do I have?")))

    reported = await reported_since(gated_model, base, 2)
    assert reported[0] == Usage(300, 12, 256)
    assert usages(events) == [as_model_usage(usage) for usage in reported]
    assert final(events).text == "Nothing there."


async def test_a_reply_without_usage_is_unknown_not_zero(
    remote: RemoteBackend, gated_model: FakeOpenAIServer
) -> None:
    gated_model.script(Reply(text="No counts.", usage=None))
    thread = await remote.create_thread()

    events = await collect(remote.run(thread, turn("hi")))

    assert usages(events) == [as_model_usage(None)]


async def test_a_resumed_run_counts_only_its_own_model_call(
    remote: RemoteBackend, gated_model: FakeOpenAIServer
) -> None:
    base = len(gated_model.reported_usage())
    gated_model.script(Reply(tool_calls=(WRITE,)), Reply(text="Written."))
    thread = await remote.create_thread()

    paused = await collect(remote.run(thread, turn("write u")))
    resumed = await collect(remote.run(thread, decide(Decision(type="approve"))))

    first, second = await reported_since(gated_model, base, 2)
    approval(paused)
    assert usages(paused) == [as_model_usage(first)]
    assert usages(resumed) == [as_model_usage(second)]
