"""The agent graph: a tool-calling loop (model → tools → model …) over the thread's messages.

The system prompt is prepended at each model call and never stored in the thread, so it cannot
leak into anything read back from the checkpoint. Tools that need a person's decision (design
§24) get LangChain's human-in-the-loop middleware between the model and the tools
(``agent/approval_gate.py``); without any, the loop is model → tools → model as before.
``build_graph`` is what the embedded backend compiles (with its SQLite checkpointer);
``make_graph`` is the entry point ``langgraph dev`` serves (``langgraph.json``): it reads its
settings from environment variables (``SWITCHBOARD_APPROVAL_TOOLS`` for approvals, see
``agent/approval_tools.py``) and compiles without a checkpointer, because the server supplies
its own.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.func import task
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.prebuilt.tool_node import ToolInvocationError
from langgraph.runtime import Runtime
from pydantic import SecretStr

from agent.approval_tools import NO_APPROVALS, ApprovalTools, approval_tools_from_env
from agent.offline_model import OfflineEchoModel
from agent.tools import build_tools
from bot.config.settings import DEFAULT_MODEL_BASE_URL, AgentSettings, ModelSettings

if TYPE_CHECKING:
    import openai

    from agent.approval_gate import ApprovalGate

logger = logging.getLogger(__name__)


class ThreadState(MessagesState, total=False):
    """A thread's state: its messages, and the reviewer's edits LangChain's human-in-the-loop
    middleware keeps between its interrupt and the tool call it edits (its own state key)."""

    hitl_edited_tool_calls: dict[str, Any]


AgentGraph = CompiledStateGraph[ThreadState, None, ThreadState, ThreadState]

MODEL_NODE = "model"
TOOLS_NODE = "tools"
REQUEST_TIMEOUT_S = 120.0
INTERRUPTED_TOOL_RESULT = (
    "No result: this tool call was interrupted before it finished "
    "(the run was stopped, or the user moved on without answering)."
)


def build_graph(
    model: BaseChatModel,
    tools: Sequence[BaseTool],
    system_prompt: str,
    checkpointer: BaseCheckpointSaver[str] | None,
    *,
    approval_tools: ApprovalTools = NO_APPROVALS,
) -> AgentGraph:
    """Compile the agent loop around ``model`` with ``tools`` bound; the calls of the tools in
    ``approval_tools`` wait for a person's decision (``agent/approval_gate.py``)."""
    bound = model.bind_tools(list(tools))
    system = SystemMessage(content=system_prompt)
    gate = _approval_gate(approval_tools, tools)

    async def call_model(state: ThreadState, config: RunnableConfig) -> ThreadState:
        history = close_dangling_tool_calls(state["messages"])
        reply = await bound.ainvoke([system, *history], config)
        return {"messages": [reply]}

    tool_node = ToolNode(
        list(tools),
        handle_tool_errors=tool_error_message,
        awrap_tool_call=gate.wrap_tool_call if gate else None,
    )

    @task
    async def tool_call(request: dict[str, Any]) -> list[AnyMessage]:
        """One call, a LangGraph task: its result is saved as the task ends."""
        output = await tool_node.ainvoke(request)
        return list(output["messages"])

    async def call_tools(state: ThreadState) -> ThreadState:
        """Run the reply's tool calls one at a time, in the model's order: ``ToolNode`` alone
        runs them concurrently, and ``present_files`` must see what ``write_file`` wrote just
        before it (and several questions must be asked in turn). Each call is a LangGraph task,
        so a run resumed after a question asked by a later call does not run the earlier ones
        again (an approved call runs once). A call already answered (a rejected one) is
        skipped; each call carries the state for the approval wrapper."""
        results: list[AnyMessage] = []
        for call in pending_tool_calls(state["messages"]):
            request = {"__type": "tool_call_with_context", "tool_call": call, "state": state}
            results.extend(await tool_call(request))
        return {"messages": results}

    builder = StateGraph(ThreadState)
    builder.add_node(MODEL_NODE, call_model)
    builder.add_node(TOOLS_NODE, call_tools)
    builder.add_edge(START, MODEL_NODE)
    to_tools = _add_gate(builder, gate) if gate else TOOLS_NODE
    builder.add_conditional_edges(MODEL_NODE, tools_condition, {"tools": to_tools, END: END})
    builder.add_edge(TOOLS_NODE, MODEL_NODE)
    return builder.compile(checkpointer=checkpointer, name="switchboard-agent")


def _approval_gate(approval_tools: ApprovalTools, tools: Sequence[BaseTool]) -> ApprovalGate | None:
    """The middleware for the gated tools (loaded only if there are some); a gated name the
    agent has no tool of is logged, since the operator meant to gate something."""
    if not approval_tools:
        return None
    unknown = sorted(set(approval_tools) - {tool.name for tool in tools})
    if unknown:
        logger.warning("approvals are configured for tools the agent does not have: %r", unknown)
    from agent.approval_gate import ApprovalGate  # noqa: PLC0415 - LangChain's agents, if used

    return ApprovalGate(approval_tools)


def _add_gate(
    builder: StateGraph[ThreadState, None, ThreadState, ThreadState], gate: ApprovalGate
) -> str:
    """Put the middleware's node between the model and the tools; returns its name. After the
    decisions, the tools run the calls left to run, or (all rejected) the model reads why."""

    async def review(state: ThreadState, runtime: Runtime[None]) -> ThreadState | None:
        return cast(ThreadState | None, await gate.review(state, runtime))

    def after_review(state: ThreadState) -> str:
        return TOOLS_NODE if pending_tool_calls(state["messages"]) else MODEL_NODE

    builder.add_node(gate.node, review)
    builder.add_conditional_edges(gate.node, after_review, [TOOLS_NODE, MODEL_NODE])
    return gate.node


def pending_tool_calls(messages: Sequence[BaseMessage]) -> list[ToolCall]:
    """The last reply's tool calls that have no result yet."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, AIMessage):
            later = messages[index + 1 :]
            answered = {m.tool_call_id for m in later if isinstance(m, ToolMessage)}
            return [call for call in message.tool_calls if call["id"] not in answered]
    return []


def tool_error_message(exc: Exception) -> str:
    """What the model reads when a tool call fails; the run goes on (the tool boundary)."""
    if isinstance(exc, ToolInvocationError):
        return exc.message
    logger.error("tool call failed", exc_info=exc)
    return f"Error: the tool failed unexpectedly ({type(exc).__name__})."


def close_dangling_tool_calls(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """Answer tool calls that never got a result, so the history stays valid for the API.

    A cancelled run, or a new message sent instead of answering a clarification, leaves an
    assistant tool call without its tool message; OpenAI-compatible endpoints reject that.
    """
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    repaired: list[BaseMessage] = []
    missing: list[BaseMessage] = []
    for message in messages:
        if missing and not isinstance(message, ToolMessage):
            repaired.extend(missing)
            missing = []
        repaired.append(message)
        if isinstance(message, AIMessage):
            missing = [
                ToolMessage(
                    content=INTERRUPTED_TOOL_RESULT, tool_call_id=call["id"], name=call["name"]
                )
                for call in message.tool_calls
                if call["id"] is not None and call["id"] not in answered
            ]
    repaired.extend(missing)
    return repaired


def chat_model(
    settings: ModelSettings,
    *,
    max_retries: int = 2,
    timeout_s: float = REQUEST_TIMEOUT_S,
    http_async_client: openai.DefaultAsyncHttpxClient | None = None,
) -> BaseChatModel:
    """``ChatOpenAI`` for the configured endpoint (``agent/openai_endpoint.py``, which only
    then loads the OpenAI SDK), or the offline echo model (design §2)."""
    if settings.offline:
        return OfflineEchoModel()
    from agent.openai_endpoint import endpoint_chat_model  # noqa: PLC0415 - about 30 MB

    return endpoint_chat_model(
        settings,
        max_retries=max_retries,
        timeout_s=timeout_s,
        http_async_client=http_async_client,
    )


def settings_from_env() -> tuple[ModelSettings, Path, str]:
    """Model settings, state dir and system prompt for ``langgraph dev`` (no YAML there)."""
    key = os.environ.get("OPENAI_API_KEY") or None
    model = ModelSettings(
        base_url=os.environ.get("OPENAI_BASE_URL") or DEFAULT_MODEL_BASE_URL,
        api_key=SecretStr(key) if key else None,
        name=os.environ.get("OPENAI_MODEL") or ModelSettings().name,
    )
    state_dir = Path(os.environ.get("SWITCHBOARD_STATE_DIR") or "./var")
    prompt = os.environ.get("SWITCHBOARD_SYSTEM_PROMPT") or AgentSettings().system_prompt
    return model, state_dir, prompt


def make_graph(config: RunnableConfig | None = None) -> AgentGraph:
    """Graph factory for ``langgraph dev`` / LangGraph Platform (see ``langgraph.json``).

    Settings come from ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, ``OPENAI_MODEL``,
    ``SWITCHBOARD_STATE_DIR``, ``SWITCHBOARD_SYSTEM_PROMPT`` and ``SWITCHBOARD_APPROVAL_TOOLS``
    (tool names, comma-separated, or JSON ``{"tool": ["approve", "reject"]}``); with no key and
    the default endpoint the offline echo model answers. ``config`` is the server's per-run
    config; the graph does not depend on it.
    """
    del config
    model, state_dir, prompt = settings_from_env()
    return build_graph(
        chat_model(model),
        build_tools(state_dir),
        prompt,
        checkpointer=None,
        approval_tools=approval_tools_from_env(os.environ),
    )
