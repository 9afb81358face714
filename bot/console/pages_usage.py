"""``/console/usage`` (design §25): the model usage the store recorded, per channel over the
last 48 hours (by hour) or 30 days (by day), ``?range=48h|30d``, its chart drawn from
``/console/api/usage?range=…``; then this month's top users and chats and its totals by model.
Days and months are those of ``usage.timezone``, as ``/usage`` and the budgets count them.

The tables read the store's sums (``UsageStore.totals``), the chart its hourly sums
(``usage_series``); a store without usage says so rather than show zeros.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final
from zoneinfo import ZoneInfo

from aiohttp import web

from bot.console.pages import deps, page, refusal
from bot.console.usage_series import RANGES, UsageRange, read_series
from bot.ports.usage import UsageDimension, UsageFilter, UsageStore, UsageTotal, usage_of
from bot.usage.budgets import period_of
from bot.usage.wording import amount, money

TOP: Final = 20
"""Users and chats the month's tables list."""
DEFAULT_RANGE: Final = "48h"
RANGE_WANTED: Final = "range must be 48h or 30d"
NOT_RECORDED: Final = "Usage is not recorded by this store."


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/usage", _usage)
    router.add_get("/api/usage", _usage_api)


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageLine:
    """A table's row: its channel and id (a user, a chat), or a model's name alone."""

    channel: str
    name: str
    total: UsageTotal


@dataclass(frozen=True, slots=True, kw_only=True)
class Month:
    """This month so far, in ``usage.timezone``."""

    began: datetime
    """Its first midnight, on the zone's clocks."""
    total: UsageTotal
    users: list[UsageLine]
    chats: list[UsageLine]
    models: list[UsageLine]


def _lines(totals: list[UsageTotal], by: UsageDimension) -> list[UsageLine]:
    """Users and chats are grouped as ``channel:id`` (an id may hold a colon, a channel not)."""
    if by == "model":
        return [UsageLine(channel="", name=total.group, total=total) for total in totals]
    lines = []
    for total in totals:
        channel, _, name = total.group.partition(":")
        lines.append(UsageLine(channel=channel, name=name, total=total))
    return lines


async def _this_month(usage: UsageStore, now: datetime, zone: ZoneInfo) -> Month:
    start = period_of(now, "month", zone).start
    since = UsageFilter(since=start)
    (total,) = await usage.totals(since)
    tops = {by: _lines(await usage.totals(since, by=by, limit=TOP), by) for by in ("user", "chat")}
    models = _lines(await usage.totals(since, by="model"), "model")
    return Month(
        began=start.astimezone(zone), total=total, users=tops["user"], chats=tops["chat"],
        models=models,
    )  # fmt: skip


def _range(request: web.Request) -> UsageRange | None:
    return RANGES.get(request.query.get("range", DEFAULT_RANGE))


async def _usage(request: web.Request) -> web.Response:
    found = deps(request)
    span = _range(request)
    if span is None:
        wrong = request.query.get("range", "")[:40]
        return refusal(400, f"{RANGE_WANTED}, not {wrong!r}")
    settings = found.settings().usage
    usage = usage_of(found.store)
    context: dict[str, object] = {
        "recorded": usage is not None,
        "not_recorded": NOT_RECORDED,
        "span": span,
        "ranges": RANGES.values(),
        "timezone": settings.timezone,
        "priced": bool(settings.prices),
        "amount": amount,
        "money": money,
    }
    if usage is not None:
        now, zone = datetime.now(UTC), ZoneInfo(settings.timezone)
        series = await read_series(usage, span, now, zone)
        context["channels"] = [columns.total(name) for name, columns in series.channels.items()]
        context["month"] = await _this_month(usage, now, zone)
    return page(request, "usage.html", "usage", **context)


async def _usage_api(request: web.Request) -> web.Response:
    found = deps(request)
    span = _range(request)
    if span is None:
        return web.json_response({"error": RANGE_WANTED}, status=400)
    usage = usage_of(found.store)
    if usage is None:
        return web.json_response({"error": "this store records no usage"}, status=404)
    settings = found.settings().usage
    series = await read_series(usage, span, datetime.now(UTC), ZoneInfo(settings.timezone))
    data = {
        "range": span.name,
        "bucket": span.bucket,
        "timezone": settings.timezone,
        "priced": bool(settings.prices),
        "times": series.times,
        "channels": {name: columns.as_json() for name, columns in series.channels.items()},
    }
    return web.json_response(data, headers={"Cache-Control": "no-store"})
