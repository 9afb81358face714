"""When schedules fire: ``at`` in a zone, cron across DST changes (design §19 "Schedules")."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.ports.schedules import ScheduleRefused
from bot.schedules.times import first_fire, latest_cron, next_cron, parse_at

BERLIN = "Europe/Berlin"
NOW = datetime(2026, 3, 27, 12, 0, tzinfo=UTC)


def utc(year: int, month: int, day: int, *time: int) -> datetime:
    hour, minute, second = (*time, 0, 0, 0)[:3]
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def test_monday_nine_oclock_in_berlin_moves_with_summer_time() -> None:
    before = next_cron("0 9 * * 1", BERLIN, NOW)  # Monday 23 March was before NOW
    assert before == utc(2026, 3, 30, 7, 0)  # CEST (UTC+2) from Sunday 29 March
    winter = next_cron("0 9 * * 1", BERLIN, utc(2026, 10, 20))
    assert winter == utc(2026, 10, 26, 8, 0)  # CET (UTC+1) from Sunday 25 October


def test_daily_times_across_the_march_change_keep_the_local_hour() -> None:
    first = next_cron("0 9 * * *", BERLIN, utc(2026, 3, 28, 9, 0))
    assert first == utc(2026, 3, 29, 7, 0)  # 09:00 CEST
    assert next_cron("0 9 * * *", BERLIN, utc(2026, 3, 28, 7, 0)) == utc(2026, 3, 28, 8, 0)


def test_a_skipped_local_time_fires_at_the_first_time_that_exists() -> None:
    # 02:30 does not exist on 29 March 2026 in Berlin (02:00 -> 03:00).
    assert next_cron("30 2 * * *", BERLIN, utc(2026, 3, 28, 12, 0)) == utc(2026, 3, 29, 1, 0)


def test_a_repeated_local_time_fires_once_for_a_fixed_hour() -> None:
    # 02:30 happens twice on 25 October 2026 in Berlin (03:00 CEST -> 02:00 CET).
    first = next_cron("30 2 * * *", BERLIN, utc(2026, 10, 24, 12, 0))
    assert first == utc(2026, 10, 25, 0, 30)  # 02:30 CEST
    assert next_cron("30 2 * * *", BERLIN, first) == utc(2026, 10, 26, 1, 30)  # next day, CET


def test_an_hourly_schedule_runs_every_real_hour_through_the_repeated_one() -> None:
    first = next_cron("30 * * * *", BERLIN, utc(2026, 10, 25, 0, 0))
    second = next_cron("30 * * * *", BERLIN, first)
    assert (first, second) == (utc(2026, 10, 25, 0, 30), utc(2026, 10, 25, 1, 30))


def test_seconds_are_a_sixth_field() -> None:
    assert next_cron("* * * * * */10", "UTC", utc(2026, 1, 1, 0, 0, 1)) == utc(2026, 1, 1, 0, 0, 10)


def test_the_latest_missed_time_is_what_lateness_is_judged_by() -> None:
    due = utc(2026, 1, 1, 9, 0)
    now = utc(2026, 1, 1, 9, 7, 30)
    assert latest_cron("* * * * *", "UTC", due, now) == utc(2026, 1, 1, 9, 7)
    assert latest_cron("0 9 * * *", "UTC", due, now) == due


def test_at_is_local_to_its_zone_unless_it_has_an_offset() -> None:
    assert parse_at("2026-03-30T09:00", BERLIN, NOW) == utc(2026, 3, 30, 7, 0)
    assert parse_at("2026-03-30 09:00+00:00", BERLIN, NOW) == utc(2026, 3, 30, 9, 0)


@pytest.mark.parametrize(
    ("at", "cron", "zone", "problem"),
    [
        ("2026-03-01T09:00", None, BERLIN, "in the past"),
        ("next tuesday", None, BERLIN, "not an ISO-8601 time"),
        (None, "0 9 * *", BERLIN, "not a cron expression"),
        (None, "61 9 * * *", BERLIN, "not a cron expression"),
        (None, "0 9 * * *", "Mars/Olympus", "unknown time zone"),
        (None, None, BERLIN, "either a time"),
        ("2026-04-01T09:00", "0 9 * * *", BERLIN, "either a time"),
    ],
)
def test_bad_input_is_refused_with_the_reason(
    at: str | None, cron: str | None, zone: str, problem: str
) -> None:
    with pytest.raises(ScheduleRefused, match=problem):
        first_fire(at=at, cron=cron, timezone=zone, now=NOW)
