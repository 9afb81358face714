"""When a schedule fires (design §19 "Schedules"): ``at`` times and cron expressions in a
time zone, computed by ``croniter`` over ``zoneinfo`` zones (DST included). ``croniter`` (with
``dateutil``) is imported by the first cron computed, not when the daemon starts.

Cron expressions have five fields, or six with seconds last (``croniter``'s order). A local
time a DST change skips (02:30 on the last Sunday of March in Europe/Berlin) fires at the
first time after it that exists, as ``croniter`` computes; a local time a DST change repeats
(02:30 on the last Sunday of October) fires once, at its first occurrence, when the hour field
names hours (``30 2 * * *``) — as cron does — and at both when it is a wildcard (``30 * * *
*``), since those mean "every hour" in real time.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bot.ports.schedules import ScheduleRefused

_HOUR_FIELD = 1
MAX_REPEAT_SKIPS = 2


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ScheduleRefused(
            f"unknown time zone {name!r}: use an IANA name such as Europe/Berlin or UTC"
        ) from None


def parse_at(text: str, timezone: str, now: datetime) -> datetime:
    """An ISO-8601 time (local to ``timezone`` unless it carries an offset), in UTC; it must
    lie in the future."""
    try:
        at = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ScheduleRefused(
            f"{text!r} is not an ISO-8601 time (like 2026-03-30T09:00 or 2026-03-30 09:00+02:00)"
        ) from None
    if at.tzinfo is None:
        at = at.replace(tzinfo=zone(timezone))
    at = at.astimezone(UTC)
    if at <= now:
        there = now.astimezone(zone(timezone))
        raise ScheduleRefused(
            f"{text} ({timezone}) is in the past: it is {there:%Y-%m-%d %H:%M} there now"
        )
    return at


def check_cron(expression: str) -> str:
    """The expression, stripped, if ``croniter`` takes it; else ``ScheduleRefused``."""
    from croniter import croniter  # noqa: PLC0415 - loaded with the first cron, not at start

    expression = " ".join(expression.split())
    fields = len(expression.split(" "))
    if fields not in (5, 6) or not croniter.is_valid(expression):
        raise ScheduleRefused(
            f"{expression!r} is not a cron expression: five fields (minute hour day month"
            " weekday, e.g. '0 9 * * 1' for Mondays at 9:00), or six with seconds last"
        )
    return expression


def next_cron(expression: str, timezone: str, after: datetime) -> datetime:
    """The first time of the expression strictly after ``after``, in UTC."""
    from croniter import CroniterError, croniter  # noqa: PLC0415 - as in check_cron

    tz = zone(timezone)
    local_after = after.astimezone(tz)
    try:
        times = croniter(expression, local_after)
        candidate: datetime = times.get_next(datetime)
        fixed_hours = "*" not in expression.split(" ")[_HOUR_FIELD]
        for _ in range(MAX_REPEAT_SKIPS):
            if not (fixed_hours and _repeats_wall_time(candidate, tz)):
                break
            candidate = times.get_next(datetime)
    except CroniterError as exc:
        raise ScheduleRefused(f"cron {expression!r}: {exc}") from None
    return candidate.astimezone(UTC)


def latest_cron(expression: str, timezone: str, due: datetime, now: datetime) -> datetime:
    """The newest time of the expression at or before ``now`` (``due`` when none is newer):
    what a late firing is judged by."""
    from croniter import CroniterError, croniter  # noqa: PLC0415 - as in check_cron

    try:
        previous: datetime = croniter(expression, now.astimezone(zone(timezone))).get_prev(datetime)
    except CroniterError as exc:
        raise ScheduleRefused(f"cron {expression!r}: {exc}") from None
    latest = max(due, previous.astimezone(UTC))
    following = next_cron(expression, timezone, latest)
    return following if following <= now else latest


def _repeats_wall_time(candidate: datetime, tz: ZoneInfo) -> bool:
    """``candidate`` is the second occurrence of a local wall time (a fall-back hour)."""
    wall = candidate.replace(tzinfo=None)
    earlier = candidate.astimezone(UTC) - timedelta(hours=1)
    return earlier.astimezone(tz).replace(tzinfo=None) == wall


def first_fire(
    *, at: str | None, cron: str | None, timezone: str, now: datetime
) -> tuple[datetime | None, str | None, datetime]:
    """Validate ``at`` xor ``cron``: ``(at in UTC, cron, first firing)``."""
    zone(timezone)
    if (at is None) == (cron is None):
        raise ScheduleRefused("give either a time (at) or a cron expression, not both or neither")
    if at is not None:
        when = parse_at(at, timezone, now)
        return when, None, when
    assert cron is not None  # noqa: S101 - checked above
    expression = check_cron(cron)
    return None, expression, next_cron(expression, timezone, now)
