"""Folding usage on both backends: per-turn rows before a time become one row per day and
dimension, and every total (by each dimension, over each day, under any filter) is the same
before and after; newer rows stay as they were."""

from __future__ import annotations

import dataclasses
import random
from datetime import timedelta
from typing import Any

from bot.ports.usage import UsageDimension, UsageFilter, UsageRecord, UsageTotal
from tests.store.support import START, BackendStore

DIMENSIONS: tuple[UsageDimension | None, ...] = (None, "user", "chat", "channel", "model")
DAYS = 40
CUTOFF = START - timedelta(days=10)


def turns(seed: int, count: int) -> list[list[UsageRecord]]:
    """``count`` turns over the ``DAYS`` days before ``START``, of a few users, chats and
    models, some with two models and some with unreported calls; costs with many digits."""
    rng = random.Random(seed)  # noqa: S311 - test data, not secrets
    made = []
    for n in range(count):
        at = START - timedelta(seconds=rng.randrange(DAYS * 86400))
        channel = rng.choice(("telegram", "slack"))
        models = rng.sample(("gpt-4o", "gpt-4o-mini", "o3"), rng.choice((1, 1, 2)))
        made.append(
            [
                UsageRecord(
                    at=at, channel=channel, account_id=rng.choice(("", "T1")),
                    chat_id=f"c{rng.randrange(4)}", user_id=f"u{rng.randrange(5)}",
                    thread_id=f"th-{n}", model=model, correlation_id=f"corr-{n}",
                    calls=rng.randrange(1, 4), unreported_calls=rng.randrange(2),
                    input_tokens=rng.randrange(10_000), output_tokens=rng.randrange(2_000),
                    cached_tokens=rng.randrange(500), cost=rng.randrange(10**7) / 1e9 * 3.7,
                )
                for model in models
            ]
        )  # fmt: skip
    return made


async def everything_summed(store: BackendStore) -> dict[str, object]:
    """Every total a reader can ask for, and over time by day, for a few filters (those that
    begin where folded rows are begin at a day's start: a folded row counts its whole day)."""
    filters = {
        "all": UsageFilter(),
        "recent": UsageFilter(since=CUTOFF),
        "month": UsageFilter(since=START.replace(hour=0) - timedelta(days=30), until=CUTOFF),
        "user": UsageFilter(user_id="u1", channel="telegram"),
        "chat": UsageFilter(chat_id="c2", model="o3"),
    }
    summed: dict[str, object] = {}
    for name, where in filters.items():
        for by in DIMENSIONS:
            summed[f"{name} by {by}"] = await store.usage.totals(where, by=by, limit=1000)
        summed[f"{name} daily"] = await store.usage.over_time(where, "day", by="user")
    return summed


async def test_folding_keeps_every_total_and_shrinks_the_old_rows(store: BackendStore) -> None:
    made = turns(seed=25, count=400)
    for turn in made:
        await store.usage.record(turn)
    before = await everything_summed(store)
    (whole,) = await store.usage.totals(UsageFilter())
    assert whole.turns == 400
    assert whole.unreported_calls > 0
    old = sum(len(turn) for turn in made if turn[0].at < CUTOFF)

    folded = await store.usage.fold(CUTOFF)

    assert folded == old
    assert await everything_summed(store) == before
    assert await store.usage.fold(CUTOFF) == 0  # folded rows are not folded again
    assert await everything_summed(store) == before


async def test_folded_rows_are_one_per_day_and_dimension_at_the_days_start(
    store: BackendStore,
) -> None:
    hour = timedelta(hours=1)
    day_start = START.replace(hour=0)
    turn = _moved(turns(seed=3, count=1)[0][0], model="gpt-4o")
    for n, at in enumerate((day_start + hour, day_start + 5 * hour, START + 30 * hour)):
        await store.usage.record([_moved(turn, at=at, correlation_id=f"corr-{n}")])
    await store.usage.record([_moved(turn, at=START, model="o3", correlation_id="corr-o3")])

    assert await store.usage.fold(START + hour) == 3

    hourly = await store.usage.over_time(UsageFilter(), "hour", by="model")
    assert [(at, t.group, t.turns) for at, t in hourly] == [
        (day_start, turn.model, 2),  # two turns of the day, folded into one row at its start
        (day_start, "o3", 1),
        (START + 30 * hour, turn.model, 1),  # not folded: newer than the cutoff
    ]
    by_user = await store.usage.totals(UsageFilter(since=day_start), by="user")
    assert by_user == [
        UsageTotal(
            group=f"{turn.channel}:{turn.user_id}", turns=4, calls=4 * turn.calls,
            unreported_calls=4 * turn.unreported_calls, input_tokens=4 * turn.input_tokens,
            output_tokens=4 * turn.output_tokens, cached_tokens=4 * turn.cached_tokens,
            cost=by_user[0].cost,
        )
    ]  # fmt: skip
    assert round(by_user[0].cost * 1e9) == 4 * round(turn.cost * 1e9)


def _moved(record: UsageRecord, **changes: Any) -> UsageRecord:
    return dataclasses.replace(record, **changes)
