"""Model usage as the console charts it (design §25): the store's hourly sums
(``UsageStore.over_time``) put into the buckets an operator reads, clock hours or the days of
``usage.timezone``, per channel, with a zero wherever nothing was used.

The store sums by UTC hour, so a day of ``usage.timezone`` is the hours that begin in it:
exact in every zone a whole number of hours off UTC; in a zone half an hour off, the hour
across midnight counts to the day it begins in. Rows folded after ``usage.detail_days`` carry
their UTC day's start, and count to the day that instant falls in.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Final

from bot.ports.usage import Bucket, UsageFilter, UsageStore, UsageTotal

COST_PLACES: Final = 6
"""A bucket's cost in the JSON, rounded (the store keeps billionths)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageRange:
    """A chart's span: ``count`` buckets of a clock hour or a local day, the last one now's."""

    name: str
    bucket: Bucket
    count: int
    label: str


RANGES: Final = {
    "48h": UsageRange(name="48h", bucket="hour", count=48, label="last 48 hours"),
    "30d": UsageRange(name="30d", bucket="day", count=30, label="last 30 days"),
}
"""The usage page's ``range=`` values."""
DAY_OF_TOKENS: Final = UsageRange(name="24h", bucket="hour", count=24, label="last 24 hours")
"""The overview's model tokens per hour (whichever activity window is shown)."""


@dataclass(slots=True)
class UsageColumns:
    """One group's sums per bucket, oldest first."""

    count: int
    turns: list[int] = field(init=False)
    calls: list[int] = field(init=False)
    unreported_calls: list[int] = field(init=False)
    input: list[int] = field(init=False)
    output: list[int] = field(init=False)
    cached: list[int] = field(init=False)
    cost: list[float] = field(init=False)

    def __post_init__(self) -> None:
        zeros = [0] * self.count
        self.turns, self.calls, self.unreported_calls = list(zeros), list(zeros), list(zeros)
        self.input, self.output, self.cached = list(zeros), list(zeros), list(zeros)
        self.cost = [0.0] * self.count

    def add(self, index: int, total: UsageTotal) -> None:
        self.turns[index] += total.turns
        self.calls[index] += total.calls
        self.unreported_calls[index] += total.unreported_calls
        self.input[index] += total.input_tokens
        self.output[index] += total.output_tokens
        self.cached[index] += total.cached_tokens
        self.cost[index] += total.cost

    def absorb(self, other: UsageColumns) -> None:
        """Add ``other``'s buckets to these (the same span)."""
        for index in range(self.count):
            self.turns[index] += other.turns[index]
            self.calls[index] += other.calls[index]
            self.unreported_calls[index] += other.unreported_calls[index]
            self.input[index] += other.input[index]
            self.output[index] += other.output[index]
            self.cached[index] += other.cached[index]
            self.cost[index] += other.cost[index]

    def total(self, group: str) -> UsageTotal:
        """Every bucket summed, as the store would sum the span."""
        return UsageTotal(
            group=group,
            turns=sum(self.turns),
            calls=sum(self.calls),
            unreported_calls=sum(self.unreported_calls),
            input_tokens=sum(self.input),
            output_tokens=sum(self.output),
            cached_tokens=sum(self.cached),
            cost=sum(self.cost),
        )

    def as_json(self) -> dict[str, list[int] | list[float]]:
        return {
            "turns": self.turns,
            "input": self.input,
            "output": self.output,
            "cached": self.cached,
            "cost": [round(value, COST_PLACES) for value in self.cost],
            "unreported_calls": self.unreported_calls,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageSeries:
    """A span's buckets: ``edges`` are their starts and, last, the end of the newest one."""

    edges: list[datetime]
    channels: dict[str, UsageColumns]

    @property
    def times(self) -> list[int]:
        """The buckets' starts in Unix seconds (uPlot's x values)."""
        return [int(edge.timestamp()) for edge in self.edges[:-1]]

    def in_all(self) -> UsageColumns:
        """Every channel's columns summed."""
        summed = UsageColumns(len(self.edges) - 1)
        for columns in self.channels.values():
            summed.absorb(columns)
        return summed


def local_midnight(day: date, zone: tzinfo) -> datetime:
    """Where ``day`` begins on the clocks of ``zone``, in UTC."""
    return datetime.combine(day, time(), tzinfo=zone).astimezone(UTC)


def edges_of(span: UsageRange, now: datetime, zone: tzinfo) -> list[datetime]:
    """The starts of the span's buckets (UTC, oldest first), then the end of the last: clock
    hours up to the one ``now`` is in, or the days of ``zone`` up to today."""
    count = span.count
    if span.bucket == "hour":
        hour = now.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
        return [hour - timedelta(hours=count - 1 - index) for index in range(count + 1)]
    today = now.astimezone(zone).date()
    return [local_midnight(today - timedelta(days=count - 1 - i), zone) for i in range(count + 1)]


def bucketed(rows: Iterable[tuple[datetime, UsageTotal]], edges: list[datetime]) -> UsageSeries:
    """The store's hourly rows, per group (channel), in the buckets ``edges`` bound."""
    count = len(edges) - 1
    channels: dict[str, UsageColumns] = {}
    for at, total in rows:
        index = bisect_right(edges, at) - 1
        if 0 <= index < count:
            channels.setdefault(total.group, UsageColumns(count)).add(index, total)
    return UsageSeries(edges=edges, channels={name: channels[name] for name in sorted(channels)})


async def read_series(
    usage: UsageStore, span: UsageRange, now: datetime, zone: tzinfo
) -> UsageSeries:
    """The span's usage per channel: one ``over_time`` query by UTC hour, bucketed here."""
    edges = edges_of(span, now, zone)
    rows = await usage.over_time(UsageFilter(since=edges[0], until=edges[-1]), "hour", "channel")
    return bucketed(rows, edges)


def tokens_per_hour(series: UsageSeries) -> dict[str, list[int]]:
    """The overview's ``tokens``: every channel's tokens per clock hour, by kind."""
    summed = series.in_all()
    return {
        "times": series.times,
        "input": summed.input,
        "output": summed.output,
        "cached": summed.cached,
        "unreported_calls": summed.unreported_calls,
    }
