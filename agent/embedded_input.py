"""What a turn feeds the embedded graph (design §6, §7, §11, §24).

A user message; an answer resuming the pending question; decisions resuming the pending
approval request; or nothing new, when a crashed run's message is already in the thread or a
crash cut off the run its decisions had resumed.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.types import Command, StateSnapshot

from agent.graph import AgentGraph, ThreadState
from agent.pauses import is_approval, pending_approval, resume_value
from agent.turn_message import turn_message
from bot.ports import Turn
from bot.ports.agent import Decision
from bot.workspace import ThreadWorkspace

logger = logging.getLogger(__name__)

MERGED_SEPARATOR = "\n\n"
"""How the kernel joins the texts of messages merged into one turn (``bot/pipeline/turns.py``)."""


class NothingToRun(enum.Enum):
    """Decisions for a request no longer pending: the run does nothing and answers nothing."""

    NOTHING_PENDING = "nothing pending"


GraphInput = Command[Any] | ThreadState | None | NothingToRun
"""``None``: continue the thread from its checkpoint."""


async def graph_input(
    graph: AgentGraph,
    config: RunnableConfig,
    turn: Turn,
    workspace: ThreadWorkspace,
    *,
    settled: bool = False,
) -> GraphInput:
    """Resume the pending request with the decisions or the question with the answer, or add
    the turn as a user message.

    An answer for a thread with no question pending (answered twice, or lost, or the thread
    waits for decisions instead) is treated as an ordinary message rather than failing the
    turn. A turn re-run after a crash finds its message already checkpointed, unanswered: the
    run continues from there (``None``) instead of showing the model the same message twice.
    A ``settled`` thread (its last run finished in this process) cannot hold one, and is not
    read for it.
    """
    if turn.resume_decisions is not None:
        return await _decisions_input(graph, config, turn.resume_decisions)
    text = turn.text
    if turn.resume_answer is not None:
        resumed = _answer_input((await graph.aget_state(config)).interrupts, turn.resume_answer)
        if resumed is not None:
            return resumed
        logger.info("no pending question on thread; treating the answer as a message")
        text = turn.resume_answer
    content = turn_message(text, turn, workspace)
    if not settled:
        left = _left_unanswered(await graph.aget_state(config))
        if content in left:
            logger.info("the thread already holds this message unanswered; continuing from it")
            return None
        for held in left:
            if content.startswith(held + MERGED_SEPARATOR):
                logger.info("the thread holds this turn's first messages; adding the rest")
                content = content[len(held) + len(MERGED_SEPARATOR) :]
                break
    return {"messages": [HumanMessage(content=content)]}


def _answer_input(interrupts: Sequence[Any], answer: str) -> Command[Any] | None:
    """Resume the pending question (not an approval request) with ``answer``."""
    questions = [pending for pending in interrupts if not is_approval(pending.value)]
    if not questions:
        return None
    if len(interrupts) == 1:
        return Command(resume=answer)
    return Command(resume={questions[0].id: answer})


async def _decisions_input(
    graph: AgentGraph, config: RunnableConfig, decisions: Sequence[Decision]
) -> Command[Any] | NothingToRun | None:
    """Resume the pending approval request. With nothing pending, a run these decisions
    resumed that was cut off before it ended (a crash after the tool ran; recovery replays the
    press) goes on from its checkpoint, so its answer is not lost and no decided call runs
    again; otherwise (decided and finished already, or the thread moved on) nothing runs, so a
    late decision never becomes a message."""
    state = await graph.aget_state(config)
    pending = pending_approval([(each.id, each.value) for each in state.interrupts])
    if pending is not None:
        return Command(resume=resume_value(pending, decisions))
    if state.next and not state.interrupts:
        logger.info("the decided run stopped before it ended; continuing it from its checkpoint")
        return None
    logger.info("no approval request pending on the thread; the decisions change nothing")
    return NothingToRun.NOTHING_PENDING


def _left_unanswered(state: StateSnapshot) -> list[str]:
    """What an unfinished run left: the user messages since the last answer, as the texts a
    turn re-running them could carry (the last one alone, the last two merged, ...), longest
    first. A finished run (nothing ``next``) left none."""
    messages = state.values.get("messages", []) if isinstance(state.values, dict) else []
    if not state.next:
        return []
    users: list[str] = []
    for message in reversed(messages):
        if isinstance(message, AIMessage) and not message.tool_calls:
            break
        if isinstance(message, HumanMessage) and isinstance(message.content, str):
            users.insert(0, message.content)
    return [MERGED_SEPARATOR.join(users[start:]) for start in range(len(users))]
