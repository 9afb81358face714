"""The AgentBackend port and the events a run yields (design §6)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from bot.messages import (
    Sender,
)
from bot.ports.mutes import TurnHandoff
from bot.ports.schedules import TurnScheduler


@dataclass(frozen=True, slots=True, kw_only=True)
class SavedUpload:
    """An inbound attachment saved into the thread's ``uploads/``."""

    name: str
    path: Path
    mime: str
    size: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    """One unit of work for the agent: user text, or the answer to its pending question."""

    text: str
    sender: Sender
    uploads: tuple[SavedUpload, ...] = ()
    notes: tuple[str, ...] = ()
    resume_answer: str | None = None
    scheduler: TurnScheduler | None = None
    """Schedules of this turn's own conversation, for the agent's schedule tools (none: the
    tools say schedules are off); design §19 "Schedules"."""
    handoff: TurnHandoff | None = None
    """The agent's ``handoff`` tool bound to this turn's conversation (none: the tool says a
    handoff is not available here); design §22."""
    chat_context: str = ""
    """Recent group messages not addressed to the bot, as a block the model reads before
    ``text`` (``group_policy: listen``, design §20); empty: none."""
    resume_decisions: tuple[Decision, ...] | None = None
    """The decisions on a paused run's ``ApprovalRequest``, one per action in its order:
    the run resumes with them (LangChain's ``{"decisions": [...]}``) instead of ``text``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolActivity:
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ClarificationRequest:
    """The agent paused to ask the user; the run ends after this event."""

    question: str
    options: tuple[str, ...] = ()


DecisionType = Literal["approve", "edit", "reject"]
"""LangChain's human-in-the-loop decision types that chat offers (``respond`` is not one:
an agent that asks the user uses a clarification, design §7)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ActionRequest:
    """One tool call a paused run waits on: LangChain's ``ActionRequest`` with the decisions
    its ``ReviewConfig`` allows."""

    name: str
    args: str
    """The call's arguments as a JSON object (text, so the value stays frozen)."""
    description: str = ""
    allowed: tuple[DecisionType, ...] = ("approve", "edit", "reject")


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRequest:
    """The agent paused before tool calls that need a person's decision (LangChain's
    ``HITLRequest``); the run ends after this event and resumes with ``Turn.resume_decisions``."""

    actions: tuple[ActionRequest, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """A person's decision on one ``ActionRequest`` (LangChain's ``Decision``)."""

    type: DecisionType
    args: str | None = None
    """``edit``: the arguments to run the tool with, a JSON object."""
    message: str | None = None
    """``reject``: the reason the model reads."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelUsage:
    """What the provider reported one model call used; ``None``: not reported (unknown,
    never zero). Yielded once per model call, before the run's last event."""

    model: str
    input_tokens: int | None
    output_tokens: int | None
    cached_tokens: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PresentedFile:
    path: Path
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class FinalAnswer:
    text: str
    files: tuple[PresentedFile, ...] = ()


AgentEvent = (
    TextDelta | ToolActivity | ModelUsage | ClarificationRequest | ApprovalRequest | FinalAnswer
)


class AgentBackend(Protocol):
    """An agent that keeps history per thread (design §6). Failures raise ``AgentError``.

    Implementations are constructed as ``Backend(settings: bot.config.settings.Settings)`` by the
    registry (no I/O in ``__init__``), then ``start()``-ed. ``run`` yields events and ends
    after a ``FinalAnswer``, a ``ClarificationRequest`` or an ``ApprovalRequest``; the next
    ``run`` with ``Turn.resume_answer`` (or ``Turn.resume_decisions``) set continues a paused
    run.
    """

    @property
    def description(self) -> str:
        """One line for startup logs and ``/admin status`` (says so when offline)."""
        ...

    async def start(self) -> None:
        """Open what the backend needs (checkpointer, HTTP client); called once."""
        ...

    def warm(self) -> None:
        """Begin loading what runs need, in the background, so that the next run does not
        wait for it (crash recovery calls it when it requeued turns, design §11). The load is
        a task of the backend's own, ended by ``aclose``; a no-op where nothing loads lazily
        or the load is done."""
        ...

    async def ready(self) -> None:
        """Return once a run can start without loading anything first (loading as ``warm``
        does if needed; cancelling the caller leaves the load running). Raises
        ``AgentError`` if the load failed. A turn's agent run begins after this (§11)."""
        ...

    async def create_thread(self) -> str: ...

    def run(self, thread_id: str, turn: Turn) -> AsyncGenerator[AgentEvent, None]: ...

    async def cancel(self, thread_id: str) -> None:
        """Stop the thread's run where it executes (a remote server); local runs are
        cancelled by cancelling the task that iterates ``run``."""
        ...

    async def aclose(self) -> None: ...
