"""What a turn asks of a LangGraph server: the run's ``input`` or its resuming ``command``
(design §6, §7, §24).

A user message is sent as ``input``. An answer resumes the thread's pending question and
decisions resume its pending approval request (the interrupt of LangChain's human-in-the-loop
middleware, in any graph built with it), both with ``command={"resume": ...}``. An answer with
no question pending is sent as a message; decisions with no request pending (decided already,
or the thread moved on) ask for no run at all.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import APIStatusError
from langgraph_sdk.schema import Command

from agent.pauses import is_approval, pending_approval, resume_value
from agent.turn_message import turn_message
from bot.ports import Turn
from bot.ports.agent import Decision
from bot.workspace import ThreadWorkspace

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRequest:
    """One run's ``input`` or ``command``; neither: nothing to run."""

    input: dict[str, Any] | None = None
    command: Command | None = None
    known_messages: frozenset[str] = frozenset()
    """Ids of the messages the thread held before a resumed run: the server may stream one of
    them again (the middleware's node hands back the model's reply with its calls revised),
    and it is not a new reply."""

    @property
    def runs(self) -> bool:
        return self.input is not None or self.command is not None


async def run_request(
    client: LangGraphClient, thread_id: str, turn: Turn, workspace: ThreadWorkspace
) -> RunRequest:
    """What the run of ``turn`` sends."""
    if turn.resume_decisions is not None:
        return await _decisions_request(client, thread_id, turn.resume_decisions)
    text = turn.text
    if turn.resume_answer is not None:
        state = await thread_state(client, thread_id)
        interrupts = pending_interrupts(state)
        questions = [each for each in interrupts if not is_approval(each.get("value"))]
        if questions:
            answer = turn.resume_answer
            resume = answer if len(interrupts) == 1 else {questions[0]["id"]: answer}
            return RunRequest(command=Command(resume=resume), known_messages=message_ids(state))
        logger.info("no pending question on thread %s; sending the answer as a message", thread_id)
        text = turn.resume_answer
    content = turn_message(text, turn, workspace)
    return RunRequest(input={"messages": [{"role": "user", "content": content}]})


async def _decisions_request(
    client: LangGraphClient, thread_id: str, decisions: Sequence[Decision]
) -> RunRequest:
    state = await thread_state(client, thread_id)
    interrupts = pending_interrupts(state)
    pending = pending_approval([(str(each.get("id")), each.get("value")) for each in interrupts])
    if pending is None:
        logger.info(
            "no approval request pending on thread %s; the decisions change nothing", thread_id
        )
        return RunRequest()
    resume = resume_value(pending, decisions)
    return RunRequest(command=Command(resume=resume), known_messages=message_ids(state))


async def thread_state(client: LangGraphClient, thread_id: str) -> dict[str, Any]:
    """The thread's current state; empty for a thread the server does not have."""
    try:
        return cast(dict[str, Any], await client.threads.get_state(thread_id))
    except APIStatusError as exc:
        if exc.status_code == 404:
            return {}
        raise


def pending_interrupts(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The thread's unanswered interrupts; older servers list them only per task."""
    interrupts = state.get("interrupts")
    if interrupts is None:
        interrupts = [i for task in state.get("tasks", []) for i in task.get("interrupts", [])]
    return [dict(interrupt) for interrupt in interrupts]


def message_ids(state: dict[str, Any]) -> frozenset[str]:
    values = state.get("values")
    messages = values.get("messages") if isinstance(values, dict) else None
    if not isinstance(messages, list):
        return frozenset()
    return frozenset(
        str(message["id"])
        for message in messages
        if isinstance(message, dict) and message.get("id")
    )
