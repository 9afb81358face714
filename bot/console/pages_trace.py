"""``/console/trace?id=ID``: what ``switchboard trace`` shows, from the same functions: every
journal entry of the message (dedupe decision, routing, conversation, turn) with its outbox
rows and every platform call, found by its message id or by its ref (the correlation id an
error reply shows); a push's delivery id or a ``schedule-ID`` shows that instead."""

from __future__ import annotations

from aiohttp import web

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
    context: dict[str, object] = {
        "wanted": wanted,
        "channel": channel or "",
        "traces": [],
        "other": None,
        "outcome": run_outcome,
        "dedupe": dedupe_text,
        "describe": describe_delivery,
        "missing": False,
        "retention_days": found.settings().daemon.journal_retention_days,
    }
    if wanted:
        store = found.store
        traced = await trace_reference(store, wanted, channel)
        traces = [] if traced is None else list(traced.traces)
        other = None
        if not traces:
            other = await trace_schedule(store, wanted) or await trace_push(store, wanted)
        context.update(
            traces=traces,
            other=None if other is None else other[1],
            missing=not traces and other is None,
        )
    return page(request, "trace.html", "trace", **context)
