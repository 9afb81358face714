"""What a decision is made of (design §24): an edit's arguments with masked values kept, each
approval's state as LangChain's decision, and the resumption a decided run goes on with."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from bot.approvals.render import MASK, loads_args
from bot.pipeline.lanes import Resumption
from bot.ports.agent import Decision
from bot.ports.approvals import Approval, ApprovalRun, ApprovalState

EXPIRED_REASON = "Nobody approved or rejected this tool call in time, so it was not run."
CANCELLED_REASON = "The request was cancelled before anyone decided, so the tool was not run."
STATES = {
    "approve": ApprovalState.APPROVED,
    "edit": ApprovalState.EDITED,
    "reject": ApprovalState.REJECTED,
}


def resumption_of(run: ApprovalRun, approvals: Sequence[Approval]) -> Resumption:
    """The run going on with every approval's decision, in the run's order."""
    return Resumption(
        run_id=run.id,
        thread_id=run.thread_id,
        asker_id=approvals[0].asker_id if approvals else "",
        decisions=tuple(decision_of(approval) for approval in approvals),
    )


def edited_args(approval: Approval, decision: Decision) -> str | ValueError:
    """The edit's arguments as a JSON object, masked values (``•••``) kept as they were."""
    try:
        edited = json.loads(decision.args or "")
    except ValueError:
        return ValueError("the new arguments are not valid JSON (send a JSON object)")
    if not isinstance(edited, dict):
        return ValueError('the new arguments must be a JSON object, e.g. {"path": "a.txt"}')
    merged = _unmasked(edited, loads_args(approval.args))
    return json.dumps(merged, ensure_ascii=False, sort_keys=True)


def _unmasked(edited: dict[str, Any], original: dict[str, Any]) -> dict[str, Any]:
    """``•••`` replaced by the original value, in nested objects too (they are masked there)."""
    merged: dict[str, Any] = {}
    for name, value in edited.items():
        before = original.get(name)
        if value == MASK and name in original:
            merged[name] = before
        elif isinstance(value, dict) and isinstance(before, dict):
            merged[name] = _unmasked(value, before)
        else:
            merged[name] = value
    return merged


def decision_of(approval: Approval) -> Decision:
    if approval.state is ApprovalState.APPROVED:
        return Decision(type="approve")
    if approval.state is ApprovalState.EDITED:
        return Decision(type="edit", args=approval.decided_args)
    if approval.state is ApprovalState.REJECTED:
        return Decision(type="reject", message=approval.reason or None)
    reason = EXPIRED_REASON if approval.state is ApprovalState.EXPIRED else CANCELLED_REASON
    return Decision(type="reject", message=reason)


def verb(state: ApprovalState) -> str:
    return {
        ApprovalState.APPROVED: "✅ Approved",
        ApprovalState.EDITED: "✏️ Approved with your changes:",
        ApprovalState.REJECTED: "❌ Rejected",
    }.get(state, state.value)
