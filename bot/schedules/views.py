"""Durable schedules in words (design §19 "Schedules"): the list's cells and JSON, with the
newest firing (``late``: delivered after a downtime, within the grace; ``skipped``: missed by
more than the grace, with the reason), and ``schedule-ID`` as ``trace`` shows it. A
schedule's text is shown as its length only, like every operator view."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bot.config.settings import Settings
from bot.operator.actions import OperationRefused
from bot.operator.labels import NONE, JsonObject, iso, table, when
from bot.ports import Store
from bot.ports.schedules import Firing, Schedule, ScheduleRefused, schedules_of
from bot.schedules.book import ScheduleBook

HEADERS = ("ID", "CHAT", "ACTION", "WHEN", "STATE", "NEXT (UTC)", "LAST", "CHARS")


async def latest_firing(store: Store, schedule_id: int) -> Firing | None:
    """The schedule's newest firing (``None`` before its first, or without schedules)."""
    table_ = schedules_of(store)
    if table_ is None:
        return None
    firings = await table_.firings(schedule_id, limit=1)
    return firings[0] if firings else None


def _last(firing: Firing | None) -> str:
    if firing is None:
        return NONE
    detail = f" ({firing.detail})" if firing.detail else ""
    return f"{firing.outcome} {when(firing.due_at)}{detail}"


def schedule_cells(schedule: Schedule, latest: Firing | None) -> list[str]:
    return [
        str(schedule.id),
        schedule.target.describe(),
        str(schedule.action),
        schedule.when,
        str(schedule.state),
        when(schedule.next_fire_at),
        _last(latest),
        str(len(schedule.text)),
    ]


def schedule_json(schedule: Schedule, latest: Firing | None) -> JsonObject:
    target = schedule.target
    return {
        "id": schedule.id,
        "channel": target.channel,
        "account": target.account_id,
        "chat": target.chat_id,
        "chat_type": str(target.chat_type),
        "topic": target.topic_id,
        "user": target.user_id,
        "action": str(schedule.action),
        "at": iso(schedule.at),
        "cron": schedule.cron,
        "timezone": schedule.timezone,
        "misfire_grace_s": schedule.misfire_grace_s,
        "state": str(schedule.state),
        "next_fire_at": iso(schedule.next_fire_at),
        "created_by": schedule.created_by,
        "created_at": iso(schedule.created_at),
        "last": None if latest is None else firing_json(latest),
        "text_length": len(schedule.text),
    }


def firing_json(firing: Firing) -> JsonObject:
    return {
        "due_at": iso(firing.due_at),
        "outcome": str(firing.outcome),
        "replica": firing.replica,
        "delivery_id": firing.delivery_id,
        "detail": firing.detail,
        "at": iso(firing.at),
    }


def firing_lines(schedule: Schedule, firings: Sequence[Firing]) -> list[str]:
    """``switchboard trace schedule-ID``: the schedule and each firing with its delivery."""
    lines = [
        f"schedule {schedule.id}: {schedule.action} {schedule.when} in"
        f" {schedule.target.describe()}, {schedule.state}, next {when(schedule.next_fire_at)}",
        f"  created by {schedule.created_by} at {when(schedule.created_at)}",
    ]
    if not firings:
        lines.append("  no firings yet")
        return lines
    cells = [
        [
            when(f.due_at),
            str(f.outcome),
            f.delivery_id or NONE,
            f.replica,
            when(f.at),
            f.detail or "",
        ]
        for f in firings
    ]
    headers = ("DUE (UTC)", "OUTCOME", "DELIVERY", "REPLICA", "CLAIMED", "DETAIL")
    lines.append(table(headers, cells, indent="  "))
    lines.append("  (`switchboard trace DELIVERY` shows a delivery's platform calls)")
    return lines


async def trace_schedule(store: Store, name: str) -> tuple[JsonObject, str] | None:
    """``schedule-ID`` as ``trace`` takes it: the schedule and its firings; ``None`` for
    any other id (or no such schedule)."""
    number = name.removeprefix("schedule-")
    table_ = schedules_of(store)
    if number == name or not number.isdigit() or table_ is None:
        return None
    found = await table_.get(int(number))
    if found is None:
        return None
    firings = await table_.firings(found.id)
    latest = firings[0] if firings else None
    as_json = {**schedule_json(found, latest), "firings": [firing_json(f) for f in firings]}
    return as_json, "\n".join(firing_lines(found, firings))


async def cancel_schedule(
    settings: Callable[[], Settings], store: Store, schedule_id: int, actor: str
) -> Schedule:
    """Cancel any chat's schedule (the book audits it). The book's refusal speaks to a chat
    ("… in this chat"); from outside one it names the schedule only."""
    try:
        return await ScheduleBook(settings, store).cancel(schedule_id, actor)
    except ScheduleRefused as exc:
        raise OperationRefused(str(exc).replace(" in this chat", "")) from None
