"""The usage meter on a real SQLite store: a turn's calls summed per model, unreported calls
counted and never taken as zero, cost from the configured prices, the Prometheus counters by
channel and model, and a store that fails or keeps no usage never failing the turn."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest
from prometheus_client import CollectorRegistry

from bot.config.settings import Settings
from bot.ports import Store
from bot.ports.agent import ModelUsage
from bot.ports.usage import UsageFilter
from bot.usage.meter import TurnIdentity, UsageMeter
from bot.usage.metrics import UsageMetrics
from store.sqlite import SqliteStore

AT = datetime(2026, 12, 6, 9, 30, tzinfo=UTC)
TURN = TurnIdentity(
    at=AT, channel="telegram", account_id="", chat_id="-100", user_id="42", thread_id="th-1",
    correlation_id="corr-7",
)  # fmt: skip
PRICES = {
    "gpt-4o": {"input": 2.5, "output": 10.0, "cached": 1.25},
    "o3": {"input": 2.0, "output": 8.0},
}


def settings(tmp_path: Path, **usage: Any) -> Settings:
    return Settings.model_validate(
        {"config_version": 1, "state_dir": str(tmp_path / "state"), "usage": usage}
    )


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    async with SqliteStore(tmp_path / "state" / "switchboard.db") as opened:
        yield opened


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


async def test_a_turns_calls_are_summed_per_model_priced_recorded_and_counted(
    tmp_path: Path, store: SqliteStore
) -> None:
    registry = CollectorRegistry()
    config = settings(tmp_path, prices=PRICES)
    meter = UsageMeter(lambda: config, store, UsageMetrics(registry))
    calls = [
        ModelUsage(model="gpt-4o", input_tokens=600, output_tokens=60, cached_tokens=400),
        ModelUsage(model="o3", input_tokens=1000, output_tokens=100, cached_tokens=200),
        ModelUsage(model="gpt-4o", input_tokens=400, output_tokens=40),
        ModelUsage(model="gpt-4o", input_tokens=None, output_tokens=None),
        ModelUsage(model="mystery", input_tokens=5, output_tokens=None),
    ]

    records = await meter.record(TURN, calls)

    assert [(r.model, r.calls, r.unreported_calls) for r in records] == [
        ("gpt-4o", 3, 1), ("o3", 1, 0), ("mystery", 1, 1),
    ]  # fmt: skip
    gpt, o3, mystery = records
    assert (gpt.input_tokens, gpt.output_tokens, gpt.cached_tokens) == (1000, 100, 400)
    assert gpt.cost == pytest.approx((600 * 2.5 + 400 * 1.25 + 100 * 10.0) / 1e6)
    assert o3.cost == pytest.approx((1000 * 2.0 + 100 * 8.0) / 1e6)  # cached priced as input
    assert (mystery.input_tokens, mystery.output_tokens, mystery.cost) == (0, 0, 0.0)
    (total,) = await store.usage.totals(UsageFilter(user_id="42"))
    assert (total.turns, total.calls, total.unreported_calls, total.tokens) == (1, 5, 2, 2200)
    assert total.cost == pytest.approx(gpt.cost + o3.cost)
    assert (gpt.at, gpt.chat_id, gpt.thread_id, gpt.correlation_id) == (
        AT,
        "-100",
        "th-1",
        "corr-7",
    )

    tokens = "switchboard_model_tokens_total"
    assert sample(registry, tokens, channel="telegram", model="gpt-4o", kind="input") == 1000
    assert sample(registry, tokens, channel="telegram", model="gpt-4o", kind="cached") == 400
    assert sample(registry, tokens, channel="telegram", model="o3", kind="output") == 100
    calls_total = "switchboard_model_calls_total"
    assert sample(registry, calls_total, channel="telegram", model="gpt-4o", reported="true") == 2
    assert sample(registry, calls_total, channel="telegram", model="gpt-4o", reported="false") == 1
    assert sample(registry, calls_total, channel="telegram", model="mystery", reported="false") == 1
    cost = sample(registry, "switchboard_model_cost_total", channel="telegram", model="o3")
    assert cost == pytest.approx(o3.cost)
    assert (
        sample(registry, "switchboard_model_cost_total", channel="telegram", model="mystery")
        is None
    )


async def test_a_turn_without_model_calls_records_nothing(
    tmp_path: Path, store: SqliteStore
) -> None:
    config = settings(tmp_path)
    meter = UsageMeter(lambda: config, store, UsageMetrics(CollectorRegistry()))
    assert await meter.record(TURN, []) == []
    (total,) = await store.usage.totals(UsageFilter())
    assert total.turns == 0


async def test_prices_are_read_as_the_settings_stand_at_each_turn(
    tmp_path: Path, store: SqliteStore
) -> None:
    current = [settings(tmp_path)]
    meter = UsageMeter(lambda: current[0], store, UsageMetrics(CollectorRegistry()))
    call = ModelUsage(model="o3", input_tokens=1_000_000, output_tokens=0)
    assert [r.cost for r in await meter.record(TURN, [call])] == [0.0]
    current[0] = settings(tmp_path, prices=PRICES)  # a reload set prices
    assert [r.cost for r in await meter.record(TURN, [call])] == [2.0]


async def test_a_store_that_fails_leaves_the_turn_alone_and_is_logged_and_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    registry = CollectorRegistry()
    config = settings(tmp_path)
    closed = SqliteStore(tmp_path / "state" / "switchboard.db")  # never opened: every call fails
    meter = UsageMeter(lambda: config, closed, UsageMetrics(registry))
    call = ModelUsage(model="gpt-4o", input_tokens=1, output_tokens=2)
    with caplog.at_level(logging.WARNING, logger="bot.usage.meter"):
        (record,) = await meter.record(TURN, [call])
    assert record.calls == 1
    assert sample(registry, "switchboard_usage_unrecorded_calls_total", channel="telegram") == 1
    (logged,) = caplog.records
    assert "usage of turn corr-7 not recorded" in logged.getMessage()
    assert "not open" in logged.getMessage()
    tokens = sample(registry, "switchboard_model_tokens_total", channel="telegram",
                    model="gpt-4o", kind="output")  # fmt: skip
    assert tokens == 2  # the metrics count what the store could not keep


async def test_a_store_without_usage_still_counts_the_metrics(tmp_path: Path) -> None:
    registry = CollectorRegistry()
    config = settings(tmp_path)
    meter = UsageMeter(lambda: config, cast(Store, object()), UsageMetrics(registry))
    call = ModelUsage(model="o3", input_tokens=3, output_tokens=4)
    assert [r.input_tokens for r in await meter.record(TURN, [call])] == [3]
    labels = {"channel": "telegram", "model": "o3", "reported": "true"}
    assert registry.get_sample_value("switchboard_model_calls_total", labels) == 1
