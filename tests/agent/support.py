"""Helpers shared by the agent tests (kept out of ``conftest.py`` so they can be imported)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

from pydantic import SecretStr

from bot.approvals.config import ApprovalSettings, ToolApproval
from bot.config.settings import AgentSettings, ModelSettings, RemoteSettings, Settings
from bot.messages import Sender
from bot.ports import (
    AgentEvent,
    ClarificationRequest,
    FinalAnswer,
    SavedUpload,
    TextDelta,
    ToolActivity,
    Turn,
)
from bot.ports.agent import ApprovalRequest, Decision, ModelUsage
from tests.fakes.openai_server import FakeOpenAIServer, ReceivedRequest

SYSTEM_PROMPT = "You are the Switchboard test agent."
SENDER = Sender(id="u1", display_name="Ada")


def model_settings(
    state_dir: Path,
    base_url: str,
    *,
    key: str = "sk-test",
    gated: dict[str, ToolApproval] | None = None,
) -> Settings:
    """Settings for the fake model; ``gated`` tools wait for decisions (``agent.approvals``)."""
    model = ModelSettings(base_url=base_url, api_key=SecretStr(key), name="fake-model")
    approvals = ApprovalSettings(tools=gated or {})
    agent = AgentSettings(model=model, system_prompt=SYSTEM_PROMPT, approvals=approvals)
    return Settings(config_version=1, state_dir=state_dir, agent=agent)


def remote_settings(url: str, state_dir: Path, *, assistant: str = "agent") -> Settings:
    remote = RemoteSettings(url=url, assistant_id=assistant, api_key=SecretStr("lg-key"))
    agent = AgentSettings(backend="remote", remote=remote)
    return Settings(config_version=1, state_dir=state_dir, agent=agent)


def offline_settings(state_dir: Path) -> Settings:
    agent = AgentSettings(system_prompt=SYSTEM_PROMPT)
    return Settings(config_version=1, state_dir=state_dir, agent=agent)


def turn(
    text: str = "",
    *,
    answer: str | None = None,
    uploads: tuple[SavedUpload, ...] = (),
    notes: tuple[str, ...] = (),
) -> Turn:
    return Turn(text=text, sender=SENDER, uploads=uploads, notes=notes, resume_answer=answer)


def decide(*decisions: Decision) -> Turn:
    """The turn carrying a person's decisions on the pending approval request."""
    return Turn(text="", sender=SENDER, resume_decisions=decisions)


async def collect(events: AsyncIterator[AgentEvent]) -> list[AgentEvent]:
    return [event async for event in events]


def final(events: list[AgentEvent]) -> FinalAnswer:
    assert events, "the run yielded nothing"
    last = events[-1]
    assert isinstance(last, FinalAnswer), f"expected a final answer, got {last!r}"
    return last


def clarification(events: list[AgentEvent]) -> ClarificationRequest:
    assert events, "the run yielded nothing"
    last = events[-1]
    assert isinstance(last, ClarificationRequest), f"expected a question, got {last!r}"
    return last


def approval(events: list[AgentEvent]) -> ApprovalRequest:
    assert events, "the run yielded nothing"
    last = events[-1]
    assert isinstance(last, ApprovalRequest), f"expected an approval request, got {last!r}"
    return last


def usages(events: list[AgentEvent]) -> list[ModelUsage]:
    return [event for event in events if isinstance(event, ModelUsage)]


def streamed_text(events: list[AgentEvent]) -> str:
    return "".join(event.text for event in events if isinstance(event, TextDelta))


def tool_names(events: list[AgentEvent]) -> list[str]:
    return [event.name for event in events if isinstance(event, ToolActivity)]


async def received(fake: FakeOpenAIServer, count: int) -> list[ReceivedRequest]:
    """Wait (without blocking the test's loop) until the fake has ``count`` requests."""
    return await asyncio.to_thread(fake.wait_for_requests, count)


def roles(request: ReceivedRequest) -> list[str]:
    return [str(message["role"]) for message in request.messages]


def tool_results(request: ReceivedRequest) -> dict[str, str]:
    """Tool messages the model saw, by tool call id."""
    return {
        str(message["tool_call_id"]): str(message["content"])
        for message in request.messages
        if message["role"] == "tool"
    }
