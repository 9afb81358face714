"""Durations as /mute and the ``access.*`` takeover keys read them, and what a bad one says."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError

from bot.config.durations import describe_duration, parse_duration
from bot.config.settings import Settings
from bot.takeover.config import YieldTo


@pytest.mark.parametrize(
    ("text", "length"),
    [("30m", timedelta(minutes=30)), ("2h", timedelta(hours=2)), ("1d", timedelta(days=1)),
     ("1h30m", timedelta(minutes=90)), (" 2W ", timedelta(weeks=2)),
     ("45s", timedelta(seconds=45))],
)  # fmt: skip
def test_durations_people_write(text: str, length: timedelta) -> None:
    assert parse_duration(text) == length


@pytest.mark.parametrize(
    ("text", "problem"),
    [("5x", "unknown unit 'x'"), ("30", "has no unit"), ("soon", "is not a duration"),
     ("", "is empty"), ("0m", "no time at all"), ("1h1h", "names 'h' twice"),
     ("400d", "longer than a year"), ("2h and", "is not a duration")],
)  # fmt: skip
def test_bad_durations_name_the_problem(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_duration(text)


def test_describe_is_the_shortest_exact_spelling() -> None:
    assert describe_duration(timedelta(minutes=90)) == "1h30m"
    assert describe_duration(timedelta(days=8)) == "8d"


def test_takeover_keys_and_their_defaults() -> None:
    default = Settings.model_validate({"config_version": 1}).access
    assert (default.yield_to, default.yield_mute, default.handoff_mute) == (
        YieldTo.HUMANS, timedelta(hours=1), None,
    )  # fmt: skip
    assert default.participants_can_mute
    access = Settings.model_validate(
        {"config_version": 1, "access": {
            "yield_mute": "off", "handoff_mute": "4h", "yield_to": "members",
            "on_call": [{"channel": "slack", "chat": "C1"}], "humans": ["slack:U1"],
        }}
    ).access  # fmt: skip
    assert (access.yield_mute, access.handoff_mute) == (timedelta(0), timedelta(hours=4))
    assert access.on_call[0].chat == "C1"
    dumped = Settings.model_validate({"config_version": 1, "access": access.model_dump()})
    assert dumped.access == access
    again = Settings.model_validate(dumped.model_dump(mode="json"))  # durations as ISO 8601
    assert again.access == access


@pytest.mark.parametrize(
    ("access", "problem"),
    [({"yield_mute": "2x"}, "unknown unit"), ({"handoff_mute": "off"}, "not a duration"),
     ({"humans": ["U1"]}, "not <channel>:<user id>"), ({"on_call": [{"channel": "slack"}]}, "chat"),
     ({"yield_to": "bots"}, "yield_to")],
)  # fmt: skip
def test_bad_takeover_keys_are_refused(access: dict[str, object], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        Settings.model_validate({"config_version": 1, "access": access})
