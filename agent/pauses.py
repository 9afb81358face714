"""What a paused run waits for, and the value that resumes it (design §7, §24).

Both backends read interrupts the same way. LangChain's ``HumanInTheLoopMiddleware`` asks for
decisions on tool calls, from any graph built with it: in its ``batched`` mode one interrupt per
model reply, ``{"action_requests": [{name, args, description}], "review_configs":
[{action_name, allowed_decisions}]}``, resumed with ``{"decisions": [...]}`` (one per action, in
order); in its ``per_call`` mode one ``{"type": "tool_approval", name, args, description}``
interrupt per call, resumed with a single decision keyed by the interrupt's id. Either becomes
an ``ApprovalRequest`` (a ``per_call`` one has a single action and offers approve, edit and
reject: its allowed decisions are in the interrupt's schema, not its value, and the graph
refuses one it does not allow). Any other interrupt (``ask_clarification``'s ``{"question",
"options"}``, or whatever a remote graph raises) is a ``ClarificationRequest``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.errors import AgentError
from bot.ports import ClarificationRequest
from bot.ports.agent import ActionRequest, ApprovalRequest, Decision, DecisionType

CHAT_DECISIONS: tuple[DecisionType, ...] = ("approve", "edit", "reject")
"""LangChain's decisions that chat offers (``respond`` is a clarification's job)."""
PER_CALL_TYPE = "tool_approval"


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingApproval:
    """The interrupt a thread's decisions answer."""

    interrupt_id: str
    actions: tuple[ActionRequest, ...]
    per_call: bool = False
    only: bool = True
    """The thread's only pending interrupt: resumed without naming its id."""


def pause_from(value: object) -> ClarificationRequest | ApprovalRequest:
    """The event an interrupt's value becomes."""
    actions = actions_from(value)
    if actions is not None:
        return ApprovalRequest(actions=actions)
    return clarification_from(value)


def clarification_from(value: object) -> ClarificationRequest:
    """Read an ``interrupt`` payload: ``{"question", "options"}`` or any other value."""
    if isinstance(value, dict):
        options = value.get("options") or []
        return ClarificationRequest(
            question=str(value.get("question", "")),
            options=tuple(str(option) for option in options),
        )
    return ClarificationRequest(question=str(value))


def is_approval(value: object) -> bool:
    return actions_from(value) is not None


def actions_from(value: object) -> tuple[ActionRequest, ...] | None:
    """The tool calls an approval interrupt waits on; ``None``: not an approval interrupt."""
    if not isinstance(value, Mapping):
        return None
    if value.get("type") == PER_CALL_TYPE and isinstance(value.get("name"), str):
        return (_action(value, CHAT_DECISIONS),)
    requests = value.get("action_requests")
    if not isinstance(requests, list) or not requests:
        return None
    allowed = _allowed_by_tool(value.get("review_configs"))
    return tuple(
        _action(request, allowed.get(str(request.get("name")), CHAT_DECISIONS))
        for request in requests
        if isinstance(request, Mapping)
    )


def _allowed_by_tool(configs: object) -> dict[str, tuple[DecisionType, ...]]:
    if not isinstance(configs, list):
        return {}
    allowed: dict[str, tuple[DecisionType, ...]] = {}
    for config in configs:
        if isinstance(config, Mapping) and isinstance(config.get("allowed_decisions"), list):
            offered = config["allowed_decisions"]
            name = str(config.get("action_name"))
            allowed[name] = tuple(decision for decision in CHAT_DECISIONS if decision in offered)
    return allowed


def _action(request: Mapping[str, Any], allowed: tuple[DecisionType, ...]) -> ActionRequest:
    args = request.get("args")
    return ActionRequest(
        name=str(request.get("name", "")),
        args=json.dumps(args if args is not None else {}, sort_keys=True, ensure_ascii=False),
        description=str(request.get("description") or ""),
        allowed=allowed,
    )


def pending_approval(interrupts: Sequence[tuple[str, object]]) -> PendingApproval | None:
    """The first of a thread's pending interrupts (``(id, value)`` pairs) that waits for
    decisions; ``None`` when none does (decided already, or the thread moved on)."""
    for interrupt_id, value in interrupts:
        actions = actions_from(value)
        if actions is not None:
            return PendingApproval(
                interrupt_id=interrupt_id,
                actions=actions,
                per_call=isinstance(value, Mapping) and value.get("type") == PER_CALL_TYPE,
                only=len(interrupts) == 1,
            )
    return None


def resume_value(pending: PendingApproval, decisions: Sequence[Decision]) -> object:
    """What ``Command(resume=...)`` carries for ``decisions`` on ``pending``: LangChain's
    ``{"decisions": [...]}``, or one decision keyed by the interrupt id (``per_call``)."""
    if len(decisions) != len(pending.actions):
        raise AgentError(
            "The decisions do not match the request waiting for them.",
            detail=f"{len(decisions)} decisions for {len(pending.actions)} actions",
        )
    payloads = [
        decision_payload(decision, action)
        for decision, action in zip(decisions, pending.actions, strict=True)
    ]
    if pending.per_call:
        return {pending.interrupt_id: payloads[0]}
    value = {"decisions": payloads}
    return value if pending.only else {pending.interrupt_id: value}


def decision_payload(decision: Decision, action: ActionRequest) -> dict[str, Any]:
    """One LangChain ``Decision``; an edit names the action's own tool."""
    if decision.type not in action.allowed:
        raise AgentError(
            "That decision is not allowed for this action.",
            detail=f"{decision.type!r} on {action.name!r} (allowed: {action.allowed!r})",
        )
    if decision.type == "approve":
        return {"type": "approve"}
    if decision.type == "edit":
        edited = {"name": action.name, "args": edited_args(decision, action)}
        return {"type": "edit", "edited_action": edited}
    payload: dict[str, Any] = {"type": "reject"}
    if decision.message is not None:
        payload["message"] = decision.message
    return payload


def edited_args(decision: Decision, action: ActionRequest) -> dict[str, Any]:
    """An edit's arguments, which must be a JSON object."""
    if decision.args is None:
        raise AgentError("An edit needs the new arguments.", detail=f"edit of {action.name!r}")
    try:
        args = json.loads(decision.args)
    except json.JSONDecodeError as exc:
        raise AgentError(
            "The edited arguments are not valid JSON.", detail=f"{action.name!r}: {exc}"
        ) from None
    if not isinstance(args, dict):
        raise AgentError(
            "The edited arguments must be a JSON object.",
            detail=f"{action.name!r}: got {type(args).__name__}",
        )
    return args
