"""LangChain's ``HumanInTheLoopMiddleware`` inside the embedded graph, wired as ``create_agent``
wires it (design §24).

The middleware is LangChain's own, unchanged: its ``aafter_model`` runs as a node after the
model (named as ``create_agent`` names it), raising one interrupt for the reply's gated tool
calls and, once resumed with the decisions, writing the rejections as tool messages and the
edits under its state key; its ``awrap_tool_call`` wraps each tool call, running an edited call
with the reviewer's arguments. Imported only when some tool is gated, so an agent without
approvals does not load LangChain's agent package.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, cast

from langchain.agents.middleware.human_in_the_loop import (
    HumanInTheLoopMiddleware,
    InterruptOnConfig,
)
from langchain.agents.middleware.types import AgentState
from langchain_core.messages import ToolCall, ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Command

from agent.approval_tools import ApprovalTools

ToolHandler = Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]]


def describe_call(tool_call: ToolCall, state: AgentState[Any], runtime: Runtime[Any]) -> str:
    """The request's description: the tool and the names of its arguments, not their values
    (chat shows the values itself, masking secrets; a description is shown as is)."""
    del state, runtime
    names = ", ".join(sorted(tool_call["args"])) or "none"
    return f"The agent wants to run {tool_call['name']} (arguments: {names})."


class ApprovalGate:
    """The middleware for ``tools``, as a graph node and a tool-call wrapper."""

    def __init__(self, tools: ApprovalTools) -> None:
        interrupt_on: dict[str, bool | InterruptOnConfig] = {
            name: InterruptOnConfig(allowed_decisions=list(decisions), description=describe_call)
            for name, decisions in tools.items()
        }
        self._middleware: HumanInTheLoopMiddleware[Any, Any, Any] = HumanInTheLoopMiddleware(
            interrupt_on=interrupt_on
        )
        self.node = f"{self._middleware.name}.after_model"
        """The node's name in the graph: ``create_agent``'s for the same hook."""

    async def review(self, state: object, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Ask for decisions on the last reply's gated calls (an interrupt), then apply them."""
        return await self._middleware.aafter_model(cast(AgentState[Any], state), runtime)

    async def wrap_tool_call(
        self, request: ToolCallRequest, handler: ToolHandler
    ) -> ToolMessage | Command[Any]:
        """Run one tool call, as the reviewer edited it if they did."""
        return await self._middleware.awrap_tool_call(request, handler)
