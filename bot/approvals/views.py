"""Approvals in the operator's words (design §24): the rows of ``switchboard approvals list`` and
of the console's page, their JSON, and the approvals of a turn as ``trace`` shows them.

Arguments look as they do in chat: secret-looking names masked (``•••``, also in the JSON and
in the console's edit box, where ``•••`` keeps the original), long values folded in the
tables; the JSON keeps the long values whole. Tools, names, reasons and arguments come from
the model and from strangers: ``table`` escapes every cell, the console autoescapes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.approvals.config import ApprovalSettings
from bot.approvals.render import MASK, loads_args, masked, shown_args
from bot.operator.labels import NONE, JsonObject, clip, iso, key_json, outbox_json, table, when
from bot.operator.trace import RowTrace, row_lines
from bot.ports import Store
from bot.ports.approvals import Approval, ApprovalRun, ApprovalState, approvals_of
from bot.text.escape import escape_controls

HEADERS = (
    "ID", "STATE", "TOOL", "CONVERSATION", "ASKER", "ARGS", "CREATED", "EXPIRES",
    "DECIDED BY", "DECIDED AT", "REASON",
)  # fmt: skip
TRACE_HEADERS = ("APPROVAL", "TOOL", "STATE", "DECIDED BY", "DECIDED AT", "REASON", "EDITED ARGS")
REASON_SHOWN = 80
RUN_PREFIX = "approval-"
"""``trace approval-RUN``: a run's own correlation id (its request edits, expiry notices, and
the replies of a resumption the daemon's sweep started)."""


def args_text(args: str, settings: ApprovalSettings) -> str:
    """Arguments on one line, masked and folded as chat shows them."""
    shown = shown_args(loads_args(args), settings)
    return json.dumps(shown, ensure_ascii=False) if shown else NONE


def masked_args(args: str, settings: ApprovalSettings) -> dict[str, Any]:
    """Arguments with secret-looking names masked, every other value whole."""
    return _masked(loads_args(args), settings)


def _masked(args: Mapping[str, Any], settings: ApprovalSettings) -> dict[str, Any]:
    return {name: _masked_value(name, value, settings) for name, value in args.items()}


def _masked_value(name: str, value: Any, settings: ApprovalSettings) -> Any:
    """As chat masks it (``render.shown_args``, nested objects too), without folding."""
    if masked(name, settings):
        return MASK
    return _masked(value, settings) if isinstance(value, dict) else value


def editable_args(approval: Approval, settings: ApprovalSettings) -> str:
    """What the console's edit box starts with: the arguments, masked values as ``•••``."""
    return json.dumps(masked_args(approval.args, settings), ensure_ascii=False, indent=2)


def decided_by(approval: Approval) -> str:
    """``Ann (console:ann)``, the ref alone when it is the name, ``-`` before a decision."""
    if approval.decided_by is None:
        return NONE
    name = approval.decided_by_name
    if not name or name == approval.decided_by:
        return approval.decided_by
    return f"{name} ({approval.decided_by})"


def _edited_text(approval: Approval, settings: ApprovalSettings) -> str:
    if approval.state is not ApprovalState.EDITED or approval.decided_args is None:
        return NONE
    return args_text(approval.decided_args, settings)


def approval_cells(approval: Approval, settings: ApprovalSettings) -> list[str]:
    args = args_text(approval.args, settings)
    edited = _edited_text(approval, settings)
    return [
        approval.id,
        str(approval.state),
        approval.tool,
        approval.key.describe(),
        approval.asker_id,
        args if edited == NONE else f"{args} → {edited}",
        when(approval.created_at),
        when(approval.expires_at),
        decided_by(approval),
        when(approval.decided_at),
        clip(approval.reason, REASON_SHOWN),
    ]


def approval_json(approval: Approval, settings: ApprovalSettings) -> JsonObject:
    decided_args = approval.decided_args
    return {
        "id": approval.id,
        "run_id": approval.run_id,
        "position": approval.position,
        "state": str(approval.state),
        "tool": approval.tool,
        "description": approval.description,
        "key": key_json(approval.key),
        "chat_type": str(approval.chat_type),
        "thread_id": approval.thread_id,
        "asker_id": approval.asker_id,
        "args": masked_args(approval.args, settings),
        "allowed": list(approval.allowed),
        "deciders": approval.deciders,
        "created_at": iso(approval.created_at),
        "expires_at": iso(approval.expires_at),
        "decided_by": approval.decided_by,
        "decided_by_name": approval.decided_by_name,
        "decided_at": iso(approval.decided_at),
        "decided_args": None if decided_args is None else masked_args(decided_args, settings),
        "reason": approval.reason,
        "message_id": approval.message_id,
    }


# --------------------------------------------------------------------------- trace


@dataclass(frozen=True, slots=True, kw_only=True)
class RunApprovals:
    """A paused run and its approvals in order, as ``trace`` shows them."""

    run: ApprovalRun
    approvals: tuple[Approval, ...]


async def turn_approvals(store: Store, correlations: Iterable[str]) -> list[RunApprovals]:
    """The runs the turns ``correlations`` paused, each with its approvals (none without an
    approvals store)."""
    table_ = approvals_of(store)
    if table_ is None:
        return []
    runs: list[RunApprovals] = []
    seen: set[str] = set()
    for correlation in dict.fromkeys(correlations):
        for approval in await table_.for_correlation(correlation):
            if approval.run_id in seen:
                continue
            seen.add(approval.run_id)
            found = await table_.run(approval.run_id)
            if found is not None:
                runs.append(RunApprovals(run=found[0], approvals=tuple(found[1])))
    return runs


def run_heading(run: ApprovalRun, *, hint: bool = True) -> str:
    """``hint``: name the id that traces the run's own messages."""
    resumed = f"resumed {when(run.resumed_at)}" if run.resumed_at else "not resumed yet"
    heading = (
        f"approval run {run.id} of turn {run.correlation_id} in {run.key.describe()},"
        f" paused {when(run.created_at)}, {resumed}"
    )
    return (
        f"{heading} (`switchboard trace {RUN_PREFIX}{run.id}`: its messages)" if hint else heading
    )


def trace_cells(approval: Approval, settings: ApprovalSettings) -> list[str]:
    return [
        approval.id,
        approval.tool,
        str(approval.state),
        decided_by(approval),
        when(approval.decided_at),
        clip(approval.reason, REASON_SHOWN),
        _edited_text(approval, settings),
    ]


def runs_lines(
    runs: Sequence[RunApprovals], settings: ApprovalSettings, *, hint: bool = True
) -> list[str]:
    """The text ``trace`` prints under a message: each run and its decisions."""
    lines: list[str] = []
    for found in runs:
        lines.append(escape_controls(f"  {run_heading(found.run, hint=hint)}"))
        cells = [trace_cells(approval, settings) for approval in found.approvals]
        lines.append(table(TRACE_HEADERS, cells, indent="    "))
    return lines


def run_json(found: RunApprovals, settings: ApprovalSettings) -> JsonObject:
    run = found.run
    return {
        "run_id": run.id,
        "correlation_id": run.correlation_id,
        "key": key_json(run.key),
        "thread_id": run.thread_id,
        "created_at": iso(run.created_at),
        "resumed_at": iso(run.resumed_at),
        "approvals": [approval_json(approval, settings) for approval in found.approvals],
    }


async def trace_approval(
    store: Store, settings: ApprovalSettings, name: str
) -> tuple[JsonObject, str] | None:
    """``approval-RUN`` or an approval's id as ``trace`` takes it: the run, its approvals and
    the outbox rows under the run's own correlation id; ``None`` for any other id."""
    table_ = approvals_of(store)
    if table_ is None:
        return None
    run_id = name.removeprefix(RUN_PREFIX)
    if run_id == name:
        approval = await table_.get(name)
        run_id = "" if approval is None else approval.run_id
    found = await table_.run(run_id) if run_id else None
    if found is None:
        return None
    traced = RunApprovals(run=found[0], approvals=tuple(found[1]))
    rows = [
        RowTrace(row=row, calls=tuple(await store.outbox.attempts(row.id)))
        for row in await store.outbox.for_correlation(RUN_PREFIX + run_id)
    ]
    as_json = {
        **run_json(traced, settings),
        "outbox": [outbox_json(each.row, each.calls) for each in rows],
    }
    lines = runs_lines([traced], settings, hint=False)
    lines += [line for each in rows for line in row_lines(each)] or ["  outbox: no rows"]
    turn = traced.run.correlation_id
    lines.append(escape_controls(f"  (`switchboard trace {turn}`: the turn that paused)"))
    return as_json, "\n".join(lines)
