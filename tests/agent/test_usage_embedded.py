"""What each model call used, as the provider reported it: one ``ModelUsage`` per call of an
embedded run, before its last event; unreported counts are unknown (``None``), never zero."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.embedded import OFFLINE_MODEL_NAME, EmbeddedBackend
from bot.approvals.config import ToolApproval
from bot.ports import FinalAnswer
from bot.ports.agent import ApprovalRequest, Decision, ModelUsage
from tests.agent.support import (
    collect,
    decide,
    model_settings,
    offline_settings,
    turn,
    usages,
)
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall, Usage

LIST = ToolCall(name="list_files", id="c_list")


def as_model_usage(reported: Usage | None, model: str = "fake-model") -> ModelUsage:
    if reported is None:
        return ModelUsage(model=model, input_tokens=None, output_tokens=None, cached_tokens=None)
    return ModelUsage(
        model=model,
        input_tokens=reported.prompt,
        output_tokens=reported.completion,
        cached_tokens=reported.cached,
    )


async def test_each_model_call_reports_what_the_provider_said_it_used(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer
) -> None:
    fake_model.script(Reply(tool_calls=(LIST,)), Reply(text="There is nothing yet."))
    thread = await backend.create_thread()

    events = await collect(backend.run(thread, turn("what files do I have?")))

    reported = fake_model.reported_usage()
    assert len(reported) == 2
    assert reported[0] != reported[1]
    assert usages(events) == [as_model_usage(usage) for usage in reported]
    assert isinstance(events[-1], FinalAnswer)


async def test_cached_tokens_are_the_providers_cache_reads(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer
) -> None:
    fake_model.script(Reply(text="Again.", usage=Usage(1200, 9, 1024)))
    thread = await backend.create_thread()

    events = await collect(backend.run(thread, turn("repeat")))

    assert usages(events) == [
        ModelUsage(model="fake-model", input_tokens=1200, output_tokens=9, cached_tokens=1024)
    ]


async def test_a_reply_without_usage_is_unknown_not_zero(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer
) -> None:
    fake_model.script(Reply(text="No counts.", usage=None))
    thread = await backend.create_thread()

    events = await collect(backend.run(thread, turn("hi")))

    assert usages(events) == [as_model_usage(None)]


@pytest.fixture
def renamed_model() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(model="provider-model-2024") as fake:
        yield fake


async def test_the_model_is_the_one_the_provider_names(
    renamed_model: FakeOpenAIServer, state_dir: Path
) -> None:
    renamed_model.script(Reply(text="Hello."))
    async with EmbeddedBackend(model_settings(state_dir, renamed_model.base_url)) as backend:
        events = await collect(backend.run(await backend.create_thread(), turn("hi")))

    [usage] = usages(events)
    assert usage.model == "provider-model-2024"
    assert usage == as_model_usage(renamed_model.reported_usage()[0], "provider-model-2024")


async def test_a_paused_run_reports_its_call_before_the_request_and_the_resumed_one_after(
    state_dir: Path, fake_model: FakeOpenAIServer
) -> None:
    gated = {"write_file": ToolApproval()}
    write = ToolCall(name="write_file", arguments={"path": "a.txt", "content": "A"})
    fake_model.script(Reply(tool_calls=(write,)), Reply(text="Written."))
    settings = model_settings(state_dir, fake_model.base_url, gated=gated)
    async with EmbeddedBackend(settings) as backend:
        thread = await backend.create_thread()
        paused = await collect(backend.run(thread, turn("write a")))
        resumed = await collect(backend.run(thread, decide(Decision(type="approve"))))

    first, second = fake_model.reported_usage()
    assert isinstance(paused[-1], ApprovalRequest)
    assert usages(paused) == [as_model_usage(first)]
    assert usages(resumed) == [as_model_usage(second)]


async def test_the_offline_model_reports_no_usage(state_dir: Path) -> None:
    async with EmbeddedBackend(offline_settings(state_dir)) as backend:
        events = await collect(backend.run(await backend.create_thread(), turn("hello")))

    assert usages(events) == [as_model_usage(None, OFFLINE_MODEL_NAME)]
