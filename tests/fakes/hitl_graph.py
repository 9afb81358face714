"""A graph built the way LangChain documents human-in-the-loop: ``create_agent`` with its
``HumanInTheLoopMiddleware``. It stands for any remote graph with approvals that the remote
backend must understand; ``langgraph dev`` serves it in the tests (``langgraph_approvals.json``).

The same environment as ``agent.graph.make_graph``: the model from ``OPENAI_*``, this repo's
tools over ``SWITCHBOARD_STATE_DIR``, and the gated tools from ``SWITCHBOARD_APPROVAL_TOOLS``.
"""

from __future__ import annotations

import os
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware.human_in_the_loop import (
    HumanInTheLoopMiddleware,
    InterruptOnConfig,
)
from langchain_core.runnables import RunnableConfig

from agent.approval_tools import approval_tools_from_env
from agent.graph import chat_model, settings_from_env
from agent.tools import build_tools


def make_hitl_graph(config: RunnableConfig | None = None) -> Any:
    """``create_agent`` over our tools, the gated ones waiting for decisions."""
    del config
    model, state_dir, prompt = settings_from_env()
    interrupt_on: dict[str, bool | InterruptOnConfig] = {
        name: InterruptOnConfig(allowed_decisions=list(decisions))
        for name, decisions in approval_tools_from_env(os.environ).items()
    }
    return create_agent(
        chat_model(model),
        build_tools(state_dir),
        system_prompt=prompt,
        middleware=[HumanInTheLoopMiddleware(interrupt_on=interrupt_on)],
        name="hitl-agent",
    )
