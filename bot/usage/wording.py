"""How budgets, the message rate and ``/usage`` say numbers, spans and times (design §25).

One place for the words, so the refusal a user gets and the ``/usage`` view that explains it
write a limit, an amount and a reset the same way.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Final
from zoneinfo import ZoneInfo

PLATFORM_NAMES: Final = {
    "telegram": "Telegram",
    "slack": "Slack",
    "feishu": "Feishu",
    "dingtalk": "DingTalk",
    "console": "the console",
}
"""How a channel is named to people; another channel is named as configured."""


def platform(channel: str) -> str:
    return PLATFORM_NAMES.get(channel, channel)


def amount(value: int) -> str:
    """Tokens with thousands separators: ``200,412``."""
    return f"{value:,}"


def money(value: float) -> str:
    """A cost in the prices' currency: cents, or four places below one unit so a small
    amount does not read as nothing."""
    if value == 0 or abs(value) >= 1:
        return f"{value:,.2f}"
    return f"{value:.4f}"


def span(length: timedelta) -> str:
    """Rounded for a person, two units at most: ``5 h 12 min``, ``3 d 4 h``, ``41 s``."""
    seconds = max(0, int(length.total_seconds()))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h" if hours else f"{days} d"
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    if minutes:
        return f"{minutes} min"
    return f"{seconds} s"


def clock_time(at: datetime, zone: ZoneInfo) -> str:
    """``00:00 UTC``, ``14:32 CET``: the time of day where the budgets' days begin."""
    return at.astimezone(zone).strftime("%H:%M %Z")


def moment(at: datetime, now: datetime, zone: ZoneInfo) -> str:
    """``at 00:00 UTC (in 5 h 12 min)``, with the date when it is more than a day away."""
    when = f"at {clock_time(at, zone)}"
    if at - now > timedelta(days=1):
        local = at.astimezone(zone)
        when = f"on {local.day} {local:%B} {when}"
    return f"{when} (in {span(at - now)})"
