"""Which tools wait for a person's decision before they run (design §24): the embedded graph's
``interrupt_on``, as a frozen mapping of tool name to the decisions it allows.

The embedded backend takes them from ``agent.approvals.tools``. ``make_graph`` (what
``langgraph dev`` serves) has no YAML and reads ``SWITCHBOARD_APPROVAL_TOOLS`` instead: tool
names separated by commas (each allows approve, edit and reject), or a JSON object naming each
tool's decisions, ``{"write_file": ["approve", "reject"]}``. Unset or empty: no tool waits.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import cast

from bot.config.settings import AgentSettings
from bot.ports.agent import DecisionType

ApprovalTools = Mapping[str, tuple[DecisionType, ...]]
"""Tool name -> the decisions a person may take on its calls, in LangChain's order."""

DECISIONS: tuple[DecisionType, ...] = ("approve", "edit", "reject")
APPROVAL_TOOLS_ENV = "SWITCHBOARD_APPROVAL_TOOLS"
NO_APPROVALS: ApprovalTools = MappingProxyType({})


def approval_tools_of(agent: AgentSettings) -> ApprovalTools:
    """``agent.approvals.tools`` as the graph takes it."""
    tools = agent.approvals.tools
    return MappingProxyType({name: tuple(tool.decisions) for name, tool in tools.items()})


def approval_tools_from_env(environ: Mapping[str, str]) -> ApprovalTools:
    """``SWITCHBOARD_APPROVAL_TOOLS`` read; a malformed value raises ``ValueError`` (or
    ``TypeError``) naming the problem: the server then refuses to load the graph rather than
    run it with the tools ungated."""
    text = environ.get(APPROVAL_TOOLS_ENV, "").strip()
    if not text:
        return NO_APPROVALS
    if text.startswith(("{", "[")):
        return MappingProxyType(_from_json(text))
    names = [name.strip() for name in text.split(",") if name.strip()]
    return MappingProxyType(dict.fromkeys(names, DECISIONS))


def _from_json(text: str) -> dict[str, tuple[DecisionType, ...]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{APPROVAL_TOOLS_ENV} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise TypeError(f"{APPROVAL_TOOLS_ENV} must be a JSON object of tool -> decisions")
    return {str(name): _decisions(str(name), value) for name, value in data.items()}


def _decisions(tool: str, value: object) -> tuple[DecisionType, ...]:
    if not isinstance(value, list) or not value:
        raise ValueError(
            f"{APPROVAL_TOOLS_ENV}: {tool!r} needs a non-empty list of decisions "
            "(approve, edit, reject)"
        )
    unknown = [item for item in value if item not in DECISIONS]
    if unknown:
        raise ValueError(
            f"{APPROVAL_TOOLS_ENV}: {tool!r} has unknown decisions {unknown!r} "
            "(use approve, edit, reject)"
        )
    return tuple(dict.fromkeys(cast(list[DecisionType], value)))
