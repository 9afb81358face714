"""``switchboard usage``: model usage and cost from the store, by user, chat, channel or model
(design §25), safe while the daemon runs.

``--since`` and ``--until`` take a date (its midnight in ``usage.timezone``), a time (ISO;
without an offset, in ``usage.timezone``) or an age (``7d``, ``24h``: that long before now);
by default the month so far, in ``usage.timezone``. A bad one is a usage error (exit 2, the
subcommand's usage shown), as argparse reports any other.

The table lists the largest groups first (``--limit``), then the total of everything the
filter matched, listed or not. ``--json`` and ``--csv`` hold the groups only, so their rows
sum to the total when nothing was cut.
"""

from __future__ import annotations

import argparse
import csv
import io
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from typing import Final
from zoneinfo import ZoneInfo

from bot.cli.operator.output import print_json, say, show
from bot.cli.operator.runner import EXIT_FAILED, add_leaf, opened_store, positive
from bot.cli.options import CommandFailed, Subcommands
from bot.config.settings import Settings
from bot.exit_codes import EXIT_OK
from bot.messages import utc_now
from bot.operator.labels import JsonObject
from bot.ports.usage import UsageDimension, UsageFilter, UsageTotal, usage_of
from bot.text.escape import escape_controls

EXIT_USAGE: Final = 2
"""As argparse ends a command it was given the wrong arguments."""
DIMENSIONS: Final = ("user", "chat", "channel", "model")
HEADERS: Final = (
    "GROUP", "TURNS", "CALLS", "UNREPORTED", "INPUT", "OUTPUT", "CACHED", "TOKENS", "COST",
)  # fmt: skip
FIELDS: Final = (
    "group", "turns", "calls", "unreported_calls", "input_tokens", "output_tokens",
    "cached_tokens", "tokens", "cost",
)  # fmt: skip
_AGE = re.compile(r"^(\d+)([dh])$")
_UNITS: Final = {"d": timedelta(days=1), "h": timedelta(hours=1)}


@dataclass(frozen=True, slots=True, kw_only=True)
class TimeBound:
    """A ``--since`` / ``--until`` as given, placed in time once the zone is known."""

    at: datetime | None = None
    """A date (its midnight) or an ISO time; naive: in ``usage.timezone``."""
    ago: timedelta | None = None

    def resolve(self, now: datetime, zone: tzinfo) -> datetime:
        if self.ago is not None:
            return now - self.ago
        assert self.at is not None  # noqa: S101 - one of the two is set (time_bound)
        return self.at if self.at.tzinfo is not None else self.at.replace(tzinfo=zone)


def time_bound(text: str) -> TimeBound:
    """An argparse type: a date, an ISO time or an age."""
    age = _AGE.match(text)
    if age is not None:
        return TimeBound(ago=int(age[1]) * _UNITS[age[2]])
    try:
        return TimeBound(at=datetime.fromisoformat(text))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a date (2026-12-01), a time (2026-12-01T09:00) or an age (7d, 24h): {text!r}"
        ) from None


def add_commands(commands: Subcommands) -> None:
    report = add_leaf(
        commands,
        "usage",
        "model tokens and cost by user, chat, channel or model",
        "bot.cli.operator.usage:usage_report",
    )
    report.add_argument("--by", choices=DIMENSIONS, default="user", help="group by (user)")
    report.add_argument(
        "--since",
        type=time_bound,
        metavar="WHEN",
        help="from a date, a time or an age (7d, 24h) (default: this month, usage.timezone)",
    )
    report.add_argument(
        "--until", type=time_bound, metavar="WHEN", help="up to, not including (default: now)"
    )
    report.add_argument("--channel", help="only this channel")
    report.add_argument("--user", metavar="ID", help="only this user's platform id")
    report.add_argument("--chat", metavar="ID", help="only this chat's platform id")
    report.add_argument("--model", help="only this model")
    report.add_argument("--csv", action="store_true", help="print CSV with a header")
    report.add_argument("--limit", type=positive, default=50, help="at most N groups (50)")


def usage_filter(args: argparse.Namespace, settings: Settings, now: datetime) -> UsageFilter:
    zone = ZoneInfo(settings.usage.timezone)
    since: TimeBound | None = args.since
    until: TimeBound | None = args.until
    start = (
        now.astimezone(zone).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        if since is None
        else since.resolve(now, zone)
    )
    end = None if until is None else until.resolve(now, zone)
    if end is not None and end <= start:
        raise CommandFailed(
            f"--until ({end.isoformat()}) is not after --since ({start.isoformat()})", EXIT_USAGE
        )
    return UsageFilter(
        since=start,
        until=end,
        channel=args.channel,
        chat_id=args.chat,
        user_id=args.user,
        model=args.model,
    )


async def usage_report(args: argparse.Namespace, settings: Settings) -> int:
    if args.json and args.csv:
        raise CommandFailed("--json and --csv: choose one", EXIT_USAGE)
    where = usage_filter(args, settings, utc_now())
    by: UsageDimension = args.by
    async with opened_store(settings) as store:
        usage = usage_of(store)
        if usage is None:
            raise CommandFailed("this store keeps no usage", EXIT_FAILED)
        groups = await usage.totals(where, by=by, limit=args.limit)
        (everything,) = await usage.totals(where)
    if args.json:
        print_json([usage_json(total) for total in groups])
    elif args.csv:
        show(usage_csv(groups))
    else:
        say(f"usage by {by} {period(where, settings.usage.timezone)}")
        show(usage_table(groups, everything))
    return EXIT_OK


def period(where: UsageFilter, zone_name: str) -> str:
    """``from 2026-12-01 00:00 to now (Europe/Berlin)``."""
    zone = ZoneInfo(zone_name)

    def local(at: datetime | None) -> str:
        return "now" if at is None else at.astimezone(zone).strftime("%Y-%m-%d %H:%M")

    return f"from {local(where.since)} to {local(where.until)} ({zone_name})"


def usage_json(total: UsageTotal) -> JsonObject:
    return {
        "group": total.group,
        "turns": total.turns,
        "calls": total.calls,
        "unreported_calls": total.unreported_calls,
        "input_tokens": total.input_tokens,
        "output_tokens": total.output_tokens,
        "cached_tokens": total.cached_tokens,
        "tokens": total.tokens,
        "cost": total.cost,
    }


def usage_csv(groups: list[UsageTotal]) -> str:
    """A header and one row per group; a group's odd characters shown escaped."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(FIELDS)
    for total in groups:
        row = usage_json(total)
        writer.writerow([escape_controls(total.group), *(row[f] for f in FIELDS[1:])])
    return out.getvalue().rstrip("\n")


def _cells(label: str, total: UsageTotal) -> list[str]:
    counts = (
        total.turns, total.calls, total.unreported_calls, total.input_tokens,
        total.output_tokens, total.cached_tokens, total.tokens,
    )  # fmt: skip
    return [escape_controls(label), *(f"{n:,}" for n in counts), f"{total.cost:,.4f}"]


def usage_table(groups: list[UsageTotal], everything: UsageTotal) -> str:
    """The groups, then the total; names left-aligned, numbers right-aligned."""
    rows = [list(HEADERS), *(_cells(t.group, t) for t in groups), _cells("total", everything)]
    widths = [max(len(row[n]) for row in rows) for n in range(len(HEADERS))]
    lines = []
    for row in rows:
        numbers = (cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True))
        lines.append("  ".join([row[0].ljust(widths[0]), *numbers]))
    return "\n".join(lines)
