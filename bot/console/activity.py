"""The overview's charts from the journal and the outbox: per time bucket, the messages
received, answered and failed, how long an answer took (p50 and p95), all of them per channel
too; how many messages were waiting or running; how long the outbox took to send.

An answer's latency is from the message being journaled to its reply being recorded (the
reply's write finishes the message: ``updated_at``); what the platform then took to show it
is in the message's trace. A message counts as answered when a turn answered it (``handled``
with a ``turn <id>`` reason), when a command replied (``command /name``) or when recovery
found its answer recorded; as an error when it ``failed``. The latency lines are the turns'
(a command's reply takes milliseconds and would hide the model's time).

Waiting at a bucket's end: the messages received by then and not finished by then (from the
window's messages; older ones still open are not counted). The outbox's lag: per bucket of
rows made, the p95 of made → sent, or → now for a row still pending. Model tokens come from
the usage store, not the journal: ``usage_series`` charts them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Final

from bot.pipeline.turn_marks import TurnMark
from bot.ports.activity import DeliveryPoint, JournalPoint
from bot.records import UNFINISHED_INBOUND, InboundStatus, OutboxState

POINTS_LOOKED_AT: Final = 20_000
"""The newest messages (and outbox rows) of the window the charts read; a busier window shows
its newest part."""
ANSWERED_REASONS: Final = ("command /", "answer recorded")


@dataclass(frozen=True, slots=True, kw_only=True)
class Window:
    name: str
    span: timedelta
    bucket: timedelta


WINDOWS: Final = {
    "hour": Window(name="hour", span=timedelta(hours=1), bucket=timedelta(minutes=5)),
    "day": Window(name="day", span=timedelta(days=1), bucket=timedelta(hours=1)),
}


@dataclass(slots=True)
class _Lines:
    """One set of lines (all channels', or one channel's) being counted."""

    count: int
    inbound: list[int] = field(init=False)
    answers: list[int] = field(init=False)
    errors: list[int] = field(init=False)
    latencies: list[list[float]] = field(init=False)

    def __post_init__(self) -> None:
        self.inbound, self.answers, self.errors = (
            [0] * self.count,
            [0] * self.count,
            [0] * self.count,
        )
        self.latencies = [[] for _ in range(self.count)]

    def add(self, index: int, point: JournalPoint) -> None:
        self.inbound[index] += 1
        if point.status is InboundStatus.FAILED:
            self.errors[index] += 1
        elif answered(point):
            self.answers[index] += 1
            if TurnMark.parse(point.reason) is not None:
                took = (point.updated_at - point.recorded_at).total_seconds()
                self.latencies[index].append(took)

    def columns(self) -> dict[str, object]:
        return {
            "inbound": self.inbound,
            "answers": self.answers,
            "errors": self.errors,
            "p50": [_rounded(percentile(values, 0.5)) for values in self.latencies],
            "p95": [_rounded(percentile(values, 0.95)) for values in self.latencies],
        }


def answered(point: JournalPoint) -> bool:
    """The message got an answer: from a turn, a command, or found recorded by recovery."""
    if point.status is not InboundStatus.HANDLED or point.reason is None:
        return False
    return TurnMark.parse(point.reason) is not None or point.reason.startswith(ANSWERED_REASONS)


def percentile(values: list[float], share: float) -> float | None:
    """The nearest-rank percentile (``share`` in 0..1) of ``values``; ``None`` for none."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, math.ceil(share * len(ordered)) - 1))
    return ordered[rank]


def series(
    points: list[JournalPoint], deliveries: list[DeliveryPoint], window: Window, now: datetime
) -> dict[str, object]:
    """uPlot's columns: bucket end times (Unix seconds), then one list per line; the same
    lines per channel under ``channels``."""
    count = int(window.span / window.bucket)
    start = now - window.span
    step = window.bucket.total_seconds()
    total = _Lines(count)
    channels: dict[str, _Lines] = {}
    for point in points:
        index = int((point.recorded_at - start).total_seconds() // step)
        if 0 <= index < count:
            total.add(index, point)
            channels.setdefault(point.channel, _Lines(count)).add(index, point)
    times = [int(start.timestamp() + step * (i + 1)) for i in range(count)]
    lag, oldest = _outbox_lag(deliveries, start, step, count, now)
    return {
        "window": window.name,
        "times": times,
        **total.columns(),
        "channels": {name: channels[name].columns() for name in sorted(channels)},
        "waiting": _waiting(points, start, step, count),
        "outbox_lag": lag,
        "outbox_oldest_pending_s": oldest,
        "truncated": len(points) >= POINTS_LOOKED_AT,
    }


def _waiting(points: list[JournalPoint], start: datetime, step: float, count: int) -> list[int]:
    """At each bucket's end, the messages received by then and not finished by then."""
    changes = [0] * (count + 1)
    for point in points:
        first = max(0, math.ceil((point.recorded_at - start).total_seconds() / step) - 1)
        last = count  # still open: waiting to the end
        if point.status not in UNFINISHED_INBOUND:
            last = min(count, math.ceil((point.updated_at - start).total_seconds() / step) - 1)
        if first < last:
            changes[first] += 1
            changes[last] -= 1
    waiting, running = [], 0
    for change in changes[:count]:
        running += change
        waiting.append(running)
    return waiting


def _outbox_lag(
    deliveries: list[DeliveryPoint], start: datetime, step: float, count: int, now: datetime
) -> tuple[list[float | None], float | None]:
    """Per bucket of rows made, the p95 seconds made → sent (→ now while pending); and the
    age of the oldest pending row."""
    lags: list[list[float]] = [[] for _ in range(count)]
    oldest: float | None = None
    for row in deliveries:
        pending = row.state is OutboxState.PENDING
        took = ((now if pending else row.updated_at) - row.created_at).total_seconds()
        if pending:
            oldest = took if oldest is None else max(oldest, took)
        elif row.state is not OutboxState.SENT:
            continue  # a dead letter was never sent: its lag is no figure
        index = int((row.created_at - start).total_seconds() // step)
        if 0 <= index < count:
            lags[index].append(took)
    return [_rounded(percentile(values, 0.95)) for values in lags], _rounded(oldest)


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)
