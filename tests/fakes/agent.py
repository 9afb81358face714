"""FakeAgent: a real, in-process implementation of the AgentBackend port for core tests.

Replies ``echo: <text>`` streamed in two deltas. ``ask: <q> | <a> | <b>`` asks a question,
and the resumed run answers ``answer: <answer>``. ``fail: <reason>`` raises AgentError.
``approve: <tool> <json> [; <tool> <json> ...]`` pauses for approvals of those tool calls, and
the resumed run answers ``decided: <type>[(<args or reason>)], ...``.
A test can hold runs whose text contains a marker until it releases them, to make a turn
"slow" without sleeping.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field

from bot.errors import AgentError
from bot.ports import (
    AgentEvent,
    ApprovalRequest,
    ClarificationRequest,
    FinalAnswer,
    PresentedFile,
    TextDelta,
    ToolActivity,
    Turn,
)
from bot.ports.agent import ActionRequest, Decision


@dataclass(frozen=True, slots=True)
class Run:
    thread_id: str
    turn: Turn


@dataclass
class FakeAgent:
    runs: list[Run] = field(default_factory=list)
    threads_created: int = 0
    cancelled: list[str] = field(default_factory=list)
    files_to_present: list[PresentedFile] = field(default_factory=list)
    reply_override: str | None = None
    thread_failures: list[AgentError] = field(default_factory=list)
    """Errors the next ``create_thread`` calls raise, in order (an unreachable server)."""
    thread_gate: asyncio.Event | None = None
    """While set to an unset event, ``create_thread`` waits for it (a slow agent server)."""

    def __post_init__(self) -> None:
        self._ids = itertools.count(1)
        self._holds: dict[str, asyncio.Event] = {}
        self.run_started = asyncio.Condition()
        self.closed = False

    @property
    def description(self) -> str:
        return "fake agent"

    async def start(self) -> None:
        """Nothing to open."""

    async def aclose(self) -> None:
        self.closed = True

    def warm(self) -> None:
        """Nothing to load."""

    async def ready(self) -> None:
        """Always ready."""

    async def create_thread(self) -> str:
        if self.thread_failures:
            raise self.thread_failures.pop(0)
        if self.thread_gate is not None:
            await self.thread_gate.wait()
        self.threads_created += 1
        return f"t{next(self._ids)}"

    async def cancel(self, thread_id: str) -> None:
        self.cancelled.append(thread_id)

    def hold(self, marker: str) -> asyncio.Event:
        """Runs whose text contains ``marker`` wait until the returned event is set."""
        event = self._holds[marker] = asyncio.Event()
        return event

    async def wait_runs(self, count: int, within: float = 5.0) -> list[Run]:
        async with asyncio.timeout(within), self.run_started:
            await self.run_started.wait_for(lambda: len(self.runs) >= count)
        return self.runs

    async def run(self, thread_id: str, turn: Turn) -> AsyncGenerator[AgentEvent, None]:
        async with self.run_started:
            self.runs.append(Run(thread_id, turn))
            self.run_started.notify_all()
        for marker, event in self._holds.items():
            if marker in turn.text:
                yield TextDelta(text="working… ")
                await event.wait()
        if turn.resume_answer is not None:
            yield FinalAnswer(text=f"answer: {turn.resume_answer}")
            return
        if turn.resume_decisions is not None:
            yield FinalAnswer(text="decided: " + ", ".join(map(_said, turn.resume_decisions)))
            return
        text = turn.text
        if text.startswith("fail:"):
            raise AgentError(text[5:].strip(), detail="scripted failure")
        if text.startswith("approve:"):
            yield ApprovalRequest(actions=tuple(map(_action, text[8:].split(";"))))
            return
        if text.startswith("ask:"):
            question, *options = [part.strip() for part in text[4:].split("|")]
            yield ToolActivity(name="ask_clarification")
            yield ClarificationRequest(question=question, options=tuple(options))
            return
        reply = self.reply_override if self.reply_override is not None else f"echo: {text}"
        half = len(reply) // 2
        yield TextDelta(text=reply[:half])
        yield TextDelta(text=reply[half:])
        yield FinalAnswer(text=reply, files=tuple(self.files_to_present))


def _action(spec: str) -> ActionRequest:
    name, _, args = spec.strip().partition(" ")
    return ActionRequest(name=name, args=args.strip() or "{}", description=f"run {name}")


def _said(decision: Decision) -> str:
    detail = decision.args if decision.type == "edit" else decision.message
    return f"{decision.type}({detail})" if detail else decision.type
