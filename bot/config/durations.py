"""Durations as people write them: ``30m``, ``2h``, ``1d``, ``1h30m`` (``/mute``, ``access.*``).

A bad one raises ``ValueError`` naming what is wrong, so a chat command and a config file can
both say it back in their own words.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Final

UNITS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
LONGEST: Final = timedelta(days=366)
_PART = re.compile(r"(\d+)([a-z]+)")
EXAMPLES: Final = "30m, 2h, 1d or 1h30m"


def parse_duration(text: str) -> timedelta:
    """``30m`` → 30 minutes; units s, m, h, d, w, combined largest first (``1h30m``)."""
    raw = text.strip().lower()
    if not raw:
        raise ValueError(f"a duration is empty (write {EXAMPLES})")
    if raw.isdigit():
        raise ValueError(f"{text!r} has no unit (write {EXAMPLES})")
    total, position, seen = 0, 0, set[str]()
    for match in _PART.finditer(raw):
        if match.start() != position:
            break
        number, unit = match.groups()
        if unit not in UNITS:
            raise ValueError(f"{text!r} has the unknown unit {unit!r} (use s, m, h, d or w)")
        if unit in seen:
            raise ValueError(f"{text!r} names {unit!r} twice")
        seen.add(unit)
        total += int(number) * UNITS[unit]
        position = match.end()
    if position != len(raw) or not seen:
        raise ValueError(f"{text!r} is not a duration (write {EXAMPLES})")
    if total == 0:
        raise ValueError(f"{text!r} is no time at all")
    length = timedelta(seconds=total)
    if length > LONGEST:
        raise ValueError(f"{text!r} is longer than a year; leave it out to mute until /unmute")
    return length


def describe_duration(length: timedelta) -> str:
    """The shortest exact spelling: 5400 s → ``1h30m``."""
    left, parts = int(length.total_seconds()), []
    for unit, seconds in sorted(UNITS.items(), key=lambda pair: -pair[1]):
        if unit == "w":
            continue
        count, left = divmod(left, seconds)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"
