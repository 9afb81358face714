"""``/console/trace?id=ID``: what ``switchboard trace`` shows, from the same functions: every
journal entry of the message (dedupe decision, routing, conversation, turn) with its outbox
rows and every platform call, found by its message id or by its ref (the correlation id an
error reply shows), with the approvals its turn paused for; a push's delivery id, a
``schedule-ID``, an approval's id or ``approval-RUN`` shows that instead."""

from __future__ import annotations

from aiohttp import web

from bot.approvals.views import (
    TRACE_HEADERS,
    run_heading,
    trace_approval,
    trace_cells,
    turn_approvals,
)
from bot.console.pages import deps, page
from bot.operator.labels import describe_delivery
from bot.operator.trace import dedupe_text, run_outcome, trace_reference
from bot.push.trace import trace_push
from bot.schedules.views import trace_schedule


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/trace", _trace)


async def _trace(request: web.Request) -> web.Response:
    found = deps(request)
    wanted = request.query.get("id", "").strip()[:200]
    channel = request.query.get("channel", "").strip() or None
    config = found.settings().agent.approvals
    context: dict[str, object] = {
        "wanted": wanted,
        "channel": channel or "",
        "traces": [],
        "other": None,
        "outcome": run_outcome,
        "dedupe": dedupe_text,
        "describe": describe_delivery,
        "missing": False,
        "approvals": {},
        "run_heading": run_heading,
        "approval_headers": TRACE_HEADERS,
        "approval_cells": lambda approval: trace_cells(approval, config),
        "retention_days": found.settings().daemon.journal_retention_days,
    }
    if wanted:
        store = found.store
        traced = await trace_reference(store, wanted, channel)
        traces = [] if traced is None else list(traced.traces)
        other = None
        if not traces:
            other = (
                await trace_schedule(store, wanted)
                or await trace_push(store, wanted)
                or await trace_approval(store, config, wanted)
            )
        context.update(
            traces=traces,
            other=None if other is None else other[1],
            missing=not traces and other is None,
            approvals={t.entry.id: await turn_approvals(store, t.correlations) for t in traces},
        )
    return page(request, "trace.html", "trace", **context)
