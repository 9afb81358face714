"""The overview's charts from the journal: per time bucket, the messages received, answered
and failed, and how long an answer took (p50 and p95).

An answer's latency is from the message being journaled to its reply being recorded (the
reply's write finishes the message: ``updated_at``); what the platform then took to show it
is in the message's trace. A message counts as answered when a turn answered it
(``handled`` with a ``turn <id>`` reason), as an error when it ``failed``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from bot.pipeline.turn_marks import TurnMark
from bot.ports.activity import JournalPoint
from bot.records import InboundStatus

POINTS_LOOKED_AT: Final = 20_000
"""The newest messages of the window the charts read; a busier window shows its newest part."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Window:
    name: str
    span: timedelta
    bucket: timedelta


WINDOWS: Final = {
    "hour": Window(name="hour", span=timedelta(hours=1), bucket=timedelta(minutes=5)),
    "day": Window(name="day", span=timedelta(days=1), bucket=timedelta(hours=1)),
}


def percentile(values: list[float], share: float) -> float | None:
    """The nearest-rank percentile (``share`` in 0..1) of ``values``; ``None`` for none."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, math.ceil(share * len(ordered)) - 1))
    return ordered[rank]


def series(points: list[JournalPoint], window: Window, now: datetime) -> dict[str, object]:
    """uPlot's columns: bucket start times (Unix seconds), then one list per line."""
    count = int(window.span / window.bucket)
    start = now - window.span
    step = window.bucket.total_seconds()
    inbound, answers, errors = [0] * count, [0] * count, [0] * count
    latencies: list[list[float]] = [[] for _ in range(count)]
    for point in points:
        index = int((point.recorded_at - start).total_seconds() // step)
        if not 0 <= index < count:
            continue
        inbound[index] += 1
        if point.status is InboundStatus.FAILED:
            errors[index] += 1
        elif point.status is InboundStatus.HANDLED and TurnMark.parse(point.reason) is not None:
            answers[index] += 1
            latencies[index].append((point.updated_at - point.recorded_at).total_seconds())
    times = [int(start.timestamp() + step * (i + 1)) for i in range(count)]
    return {
        "window": window.name,
        "times": times,
        "inbound": inbound,
        "answers": answers,
        "errors": errors,
        "p50": [_rounded(percentile(values, 0.5)) for values in latencies],
        "p95": [_rounded(percentile(values, 0.95)) for values in latencies],
        "truncated": len(points) >= POINTS_LOOKED_AT,
    }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)
