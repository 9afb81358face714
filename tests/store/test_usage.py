"""The usage tables on both backends: a turn's rows read back as totals by user, chat, channel
and model and over time; a turn counts once; filters bound what is summed; message counts per
minute are shared by two stores on the same data; purging drops what is older."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

import pytest

from bot.errors import StoreError
from bot.ports.usage import UsageFilter, UsageRecord, UsageTotal, usage_of
from tests.store.support import START, BackendStore, StoreFactory

EVERYTHING = UsageFilter()
BASE = UsageRecord(
    at=START, channel="telegram", account_id="", chat_id="c1", user_id="u1", thread_id="th-1",
    model="gpt-4o", correlation_id="corr-1", calls=1, unreported_calls=0, input_tokens=100,
    output_tokens=10, cached_tokens=0, cost=0.0,
)  # fmt: skip
ZERO = UsageTotal(
    group="", turns=0, calls=0, unreported_calls=0, input_tokens=0, output_tokens=0,
    cached_tokens=0, cost=0.0,
)  # fmt: skip


def usage(**changes: Any) -> UsageRecord:
    """One turn's usage of one model: ``BASE`` with ``changes``."""
    return dataclasses.replace(BASE, **changes)


def total(**changes: Any) -> UsageTotal:
    return dataclasses.replace(ZERO, **changes)


async def test_the_store_has_usage_and_nothing_recorded_sums_to_zero(store: BackendStore) -> None:
    assert usage_of(store) is not None
    assert await store.usage.totals(EVERYTHING) == [total()]
    assert await store.usage.totals(EVERYTHING, by="user") == []
    assert await store.usage.over_time(EVERYTHING, "day") == []


async def test_a_turn_of_two_models_counts_once_and_sums_each_model(store: BackendStore) -> None:
    await store.usage.record(
        [
            usage(model="gpt-4o", calls=3, input_tokens=900, output_tokens=90, cached_tokens=400,
                  cost=0.001234567),
            usage(model="gpt-4o-mini", calls=2, unreported_calls=1, input_tokens=50,
                  output_tokens=5),
        ]
    )  # fmt: skip
    await store.usage.record([usage(user_id="u2", model="gpt-4o-mini", input_tokens=10)])
    assert await store.usage.totals(EVERYTHING) == [
        total(turns=2, calls=6, unreported_calls=1, input_tokens=960, output_tokens=105,
              cached_tokens=400, cost=0.001234567)
    ]  # fmt: skip
    by_model = await store.usage.totals(EVERYTHING, by="model")
    assert [(t.group, t.turns, t.calls, t.tokens) for t in by_model] == [
        ("gpt-4o", 1, 3, 990),  # the turn counts under its first model
        ("gpt-4o-mini", 1, 3, 75),
    ]
    by_user = await store.usage.totals(EVERYTHING, by="user")
    assert [(t.group, t.turns, t.tokens) for t in by_user] == [
        ("telegram:u1", 1, 1045),
        ("telegram:u2", 1, 20),
    ]


async def test_totals_group_by_each_dimension_largest_first_within_the_limit(
    store: BackendStore,
) -> None:
    await store.usage.record([usage(channel="slack", chat_id="C1", user_id="U1", input_tokens=5)])
    await store.usage.record([usage(chat_id="c1", user_id="u1", input_tokens=300)])
    await store.usage.record([usage(chat_id="c2", user_id="u1", input_tokens=200)])
    await store.usage.record([usage(chat_id="c2", user_id="u2", input_tokens=700, model="o3")])
    groups = {
        by: [(t.group, t.tokens) for t in await store.usage.totals(EVERYTHING, by=by)]
        for by in ("user", "chat", "channel", "model")
    }
    assert groups == {
        "user": [("telegram:u2", 710), ("telegram:u1", 520), ("slack:U1", 15)],
        "chat": [("telegram:c2", 920), ("telegram:c1", 310), ("slack:C1", 15)],
        "channel": [("telegram", 1230), ("slack", 15)],
        "model": [("o3", 710), ("gpt-4o", 535)],
    }
    top = await store.usage.totals(EVERYTHING, by="chat", limit=1)
    assert [t.group for t in top] == ["telegram:c2"]


async def test_a_filter_sums_only_the_rows_it_names(store: BackendStore) -> None:
    day = timedelta(days=1)
    await store.usage.record([usage(at=START - day, input_tokens=1)])
    await store.usage.record([usage(at=START, input_tokens=20, output_tokens=0)])
    await store.usage.record([usage(at=START + day, input_tokens=300, output_tokens=0)])
    await store.usage.record([usage(user_id="u2", chat_id="c2", model="o3", input_tokens=4000)])
    await store.usage.record([usage(channel="slack", input_tokens=50000)])

    async def tokens(**where: object) -> int:
        (found,) = await store.usage.totals(UsageFilter(**where))  # type: ignore[arg-type]
        return found.input_tokens

    assert await tokens(since=START) == 20 + 300 + 4000 + 50000
    assert await tokens(since=START, until=START + day, channel="telegram") == 4020
    assert await tokens(until=START) == 1
    assert await tokens(user_id="u2") == await tokens(chat_id="c2") == await tokens(model="o3")
    assert await tokens(user_id="u1", channel="slack") == 50000
    assert await tokens(user_id="nobody") == 0


async def test_over_time_sums_each_hour_or_day_of_each_group(store: BackendStore) -> None:
    hour = timedelta(hours=1)
    await store.usage.record([usage(at=START + timedelta(minutes=5), input_tokens=1)])
    await store.usage.record([usage(at=START + timedelta(minutes=55), input_tokens=2)])
    await store.usage.record([usage(at=START + hour, input_tokens=4, channel="slack")])
    await store.usage.record([usage(at=START + 13 * hour, input_tokens=8)])  # the next day
    day_start = START.replace(hour=0)
    hourly = await store.usage.over_time(EVERYTHING, "hour")
    assert [(at, t.group, t.input_tokens) for at, t in hourly] == [
        (START, "telegram", 3),
        (START + hour, "slack", 4),
        (START + 13 * hour, "telegram", 8),
    ]
    daily = await store.usage.over_time(EVERYTHING, "day", by="user")
    assert [(at, t.group, t.input_tokens, t.turns) for at, t in daily] == [
        (day_start, "slack:u1", 4, 1),
        (day_start, "telegram:u1", 3, 2),
        (day_start + timedelta(days=1), "telegram:u1", 8, 1),
    ]
    since = await store.usage.over_time(UsageFilter(since=START + hour), "day")
    assert [(t.group, t.input_tokens) for _, t in since] == [("slack", 4), ("telegram", 8)]


async def test_a_negative_count_is_refused_and_nothing_of_the_turn_is_kept(
    store: BackendStore,
) -> None:
    with pytest.raises(StoreError, match="'gpt-4o' holds a negative count"):
        await store.usage.record([usage(model="o3"), usage(input_tokens=-1)])
    assert await store.usage.totals(EVERYTHING) == [total()]


async def test_message_counts_are_per_user_and_minute_and_shared_by_two_stores(
    store: BackendStore, make_store: StoreFactory
) -> None:
    minute = START + timedelta(seconds=30)  # counted in the minute it falls in
    async with make_store() as other:
        counts = [
            await store.usage.hit("telegram", "u1", minute),
            await other.usage.hit("telegram", "u1", START),
            await store.usage.hit("telegram", "u2", START),
            await other.usage.hit("slack", "u1", START),
            await other.usage.hit("telegram", "u1", START + timedelta(seconds=59)),
        ]
        assert counts == [1, 2, 1, 1, 3]
        later = START + timedelta(minutes=1)
        assert await store.usage.hit("telegram", "u1", later) == 1
        assert await other.usage.hit("telegram", "u1", later) == 2


async def test_purge_drops_usage_and_message_counts_older_than_the_time(
    store: BackendStore,
) -> None:
    day = timedelta(days=1)
    await store.usage.record([usage(at=START - 2 * day, input_tokens=1)])
    await store.usage.record([usage(at=START - day, input_tokens=20), usage(model="o3")])
    await store.usage.record([usage(at=START, input_tokens=300)])
    await store.usage.hit("telegram", "u1", START - 2 * day)
    await store.usage.hit("telegram", "u2", START)
    assert await store.usage.purge(START - day) == 2  # one usage row, one count
    (left,) = await store.usage.totals(EVERYTHING)
    assert (left.turns, left.input_tokens) == (2, 420)
    assert await store.usage.hit("telegram", "u2", START) == 2
    assert await store.usage.purge(START - 3 * day) == 0
