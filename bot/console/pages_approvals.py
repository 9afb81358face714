"""``/console/approvals``: the tool calls waiting for a person (approve; reject with a reason;
edit the arguments as JSON), then the recently decided ones: who decided what, when and why.

A decision goes through the approvals book as on the command line (``bot.approvals.operator``:
chat's rules, audited as ``console:<name>``); the daemon's approvals sweep, on the replica
holding the chat, edits the request messages and resumes the run within seconds.
"""

from __future__ import annotations

from datetime import datetime

from aiohttp import web

from bot.approvals.operator import decide_as_operator
from bot.approvals.views import HEADERS, approval_cells, args_text, editable_args
from bot.console.pages import back, deps, form, page, refusals_go_back, session
from bot.messages import utc_now
from bot.ports.agent import Decision, DecisionType
from bot.ports.approvals import Approval, ApprovalState, approvals_of

PATH = "/console/approvals"
PENDING_SHOWN = 100
DECIDED_SHOWN = 50
DESCRIPTION_SHOWN = 300
ENDED = tuple(state for state in ApprovalState if state is not ApprovalState.PENDING)


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/approvals", _approvals)
    router.add_post("/approvals/approve", _approve)
    router.add_post("/approvals/reject", _reject)
    router.add_post("/approvals/edit", _edit)


async def _approvals(request: web.Request) -> web.Response:
    found = deps(request)
    config = found.settings().agent.approvals
    table = approvals_of(found.store)
    pending: list[Approval] = []
    decided: list[Approval] = []
    if table is not None:
        # Oldest first: the next to expire on top.
        pending = (await table.listed(state=ApprovalState.PENDING, limit=PENDING_SHOWN))[::-1]
        for state in ENDED:
            decided += await table.listed(state=state, limit=DECIDED_SHOWN)
        decided.sort(key=_ended_at, reverse=True)
    return page(
        request,
        "approvals.html",
        "approvals",
        has_approvals=table is not None,
        pending=pending,
        now=utc_now(),
        args_text=lambda approval: args_text(approval.args, config),
        editable=lambda approval: editable_args(approval, config),
        description_shown=DESCRIPTION_SHOWN,
        headers=HEADERS,
        decided=[approval_cells(each, config) for each in decided[:DECIDED_SHOWN]],
    )


def _ended_at(approval: Approval) -> datetime:
    """When it stopped waiting, as near as the row tells (a cancellation keeps no time)."""
    if approval.decided_at is not None:
        return approval.decided_at
    if approval.state is ApprovalState.EXPIRED:
        return approval.expires_at
    return approval.created_at


async def _approve(request: web.Request) -> web.Response:
    return await _decide(request, "approve")


async def _reject(request: web.Request) -> web.Response:
    return await _decide(request, "reject")


async def _edit(request: web.Request) -> web.Response:
    return await _decide(request, "edit")


async def _decide(request: web.Request, choice: DecisionType) -> web.Response:
    fields = await form(request)
    approval_id = fields.get("approval_id", "").strip()
    if not approval_id:
        raise back(PATH, failed="no approval id was sent")
    decision = Decision(
        type=choice,
        args=fields.get("args", "") if choice == "edit" else None,
        message=(fields.get("reason", "").strip() or None) if choice == "reject" else None,
    )
    found = deps(request)
    with refusals_go_back(PATH):
        said = await decide_as_operator(
            found.settings,
            found.store,
            approval_id,
            decision,
            session(request).actor,
            metrics=found.approval_metrics,
        )
    raise back(PATH, note=said)
