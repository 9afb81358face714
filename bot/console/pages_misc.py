"""``/console/schedules`` (durable schedules with their newest firing, cancel; push
deliveries waiting in the outbox) and ``/console/audit`` (the newest admin actions: chat,
CLI and console alike)."""

from __future__ import annotations

from aiohttp import web

from bot.console.pages import back, deps, form, page, refusals_go_back, session
from bot.operator.labels import AUDIT_HEADERS, audit_cells, describe_delivery
from bot.ports.push import push_kind
from bot.ports.schedules import schedules_of
from bot.records import OutboxState
from bot.schedules.book import ScheduleBook
from bot.schedules.views import HEADERS as SCHEDULE_HEADERS
from bot.schedules.views import cancel_schedule, latest_firing, schedule_cells

PATH = "/console/schedules"
AUDIT_SHOWN = 200
PUSH_ROWS_LOOKED_AT = 500


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/schedules", _schedules)
    router.add_post("/schedules/cancel", _cancel)
    router.add_get("/audit", _audit)


async def _schedules(request: web.Request) -> web.Response:
    found = deps(request)
    store = found.store
    table = schedules_of(store)
    rows: list[tuple[int, list[str]]] = []
    if table is not None:
        book = ScheduleBook(found.settings, store)
        for schedule in await book.listed(channel=None, chat_id=None, active_only=True):
            latest = await latest_firing(store, schedule.id)
            rows.append((schedule.id, schedule_cells(schedule, latest)))
    pushes = []
    for state in (OutboxState.PENDING, OutboxState.DEAD):
        for row in await store.outbox.listing(state, limit=PUSH_ROWS_LOOKED_AT):
            kind = push_kind(row.item)
            if kind is not None:
                pushes.append((row, str(kind)))
    return page(
        request,
        "schedules.html",
        "schedules",
        has_schedules=table is not None,
        headers=SCHEDULE_HEADERS,
        schedules=rows,
        pushes=pushes,
        describe=describe_delivery,
    )


async def _cancel(request: web.Request) -> web.Response:
    found = deps(request)
    text = (await form(request)).get("schedule_id", "").strip()
    if not text.isdigit():
        raise back(PATH, failed=f"not a schedule id: {text!r}")
    with refusals_go_back(PATH):
        await cancel_schedule(found.settings, found.store, int(text), session(request).actor)
    raise back(PATH, note=f"schedule {text} cancelled")


async def _audit(request: web.Request) -> web.Response:
    entries = await deps(request).store.audit.recent(AUDIT_SHOWN)
    return page(
        request,
        "audit.html",
        "audit",
        headers=AUDIT_HEADERS,
        entries=[audit_cells(entry) for entry in entries],
    )
