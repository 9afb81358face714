"""``/console/``: channels (their state coloured, with a readable reason), replicas and their
chats, queues, running turns, the outbox, the newest messages (``/console/partials/overview``
refreshes them every few seconds) and the charts, in all and per channel
(``/console/api/activity?window=hour|day``), with the model tokens of the last 24 clock
hours from the usage store (``tokens``: ``null`` when the store records no usage)."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

from aiohttp import web

from bot.console.activity import POINTS_LOOKED_AT, WINDOWS, series
from bot.console.channel_states import channel_view
from bot.console.context import ConsoleDeps
from bot.console.pages import deps, page
from bot.console.render import render
from bot.console.usage_series import DAY_OF_TOKENS, read_series, tokens_per_hour
from bot.operator.labels import REPLICA_HEADERS, replica_cells
from bot.ports.activity import journal_window_of
from bot.ports.usage import usage_of
from bot.records import InboundStatus

RECENT_MESSAGES = 15


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/", _overview)
    router.add_get("/partials/overview", _live)
    router.add_get("/api/activity", _activity)


async def live_facts(found: ConsoleDeps) -> dict[str, object]:
    store, hub, settings = found.store, found.hub, found.settings()
    now = datetime.now(UTC)
    replicas = await store.replicas.live(now, settings.daemon.replica_expiry_s)
    unfinished = Counter(entry.status for entry in await store.inbound.unfinished())
    window = journal_window_of(store)
    recent = [] if window is None else await window.recent(limit=RECENT_MESSAGES)
    channels = [
        channel_view(name, hub.state(name), hub.reason(name), paused=hub.is_paused(name))
        for name in hub.names()
    ]
    return {
        "channels": channels,
        "replica_headers": REPLICA_HEADERS,
        "replicas": [replica_cells(r, await store.leases.held(r.id)) for r in replicas],
        "this_replica": found.replica_id,
        "outbox": {str(state): count for state, count in (await store.outbox.counts()).items()},
        "pairings": len(await store.access.pending_pairings(now)),
        "live": found.live,
        "fleet_running": unfinished[InboundStatus.RUNNING],
        "fleet_waiting": unfinished[InboundStatus.ACCEPTED],
        "recent": recent,
        "has_history": window is not None,
        "updated": now,
    }


async def _overview(request: web.Request) -> web.Response:
    facts = await live_facts(deps(request))
    recorded = usage_of(deps(request).store) is not None
    return page(request, "overview.html", "overview", usage_recorded=recorded, **facts)


async def _live(request: web.Request) -> web.Response:
    return render("overview_live.html", await live_facts(deps(request)))


async def _activity(request: web.Request) -> web.Response:
    window = WINDOWS.get(request.query.get("window", "hour"))
    if window is None:
        return web.json_response({"error": "window must be hour or day"}, status=400)
    journal = journal_window_of(deps(request).store)
    if journal is None:
        return web.json_response({"error": "this store keeps no journal history"}, status=404)
    now = datetime.now(UTC)
    points = await journal.points(now - window.span, POINTS_LOOKED_AT)
    deliveries = await journal.deliveries(now - window.span, POINTS_LOOKED_AT)
    data = series(points, deliveries, window, now)
    usage = usage_of(deps(request).store)
    tokens = None
    if usage is not None:
        tokens = tokens_per_hour(await read_series(usage, DAY_OF_TOKENS, now, UTC))
    data["tokens"] = tokens
    return web.json_response(data, headers={"Cache-Control": "no-store"})
