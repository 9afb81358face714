"""The dashboard's model usage panels on a real Prometheus scraping a daemon whose agent reports
its model calls: tokens per second by model and kind, cost per hour by channel, and the share
of calls whose usage the provider did not report (zero, not missing, for a model that reports
every call)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from pathlib import Path

import pytest
from typing_extensions import override

from bot.ports import AgentEvent, Turn
from bot.ports.agent import ModelUsage
from tests.bot.harness import make_settings, running
from tests.deploy.prometheus_server import Api, prometheus, scrape_config
from tests.deploy.support import NOT_INSTALLED, PROMETHEUS, dashboard_panels, runnable
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import FakeChannel, dm
from tests.fakes.common.waiting import eventually

pytestmark = pytest.mark.skipif(PROMETHEUS is None, reason=NOT_INSTALLED.format("prometheus"))

PRICES = {"gpt-test": {"input": 1.0, "output": 2.0}, "gpt-mini": {"input": 0.1, "output": 0.4}}
TOKENS = "Model tokens per second by model and kind"
COST = "Model cost per hour by channel"
UNREPORTED = "Share of model calls with unreported usage"


class MeteredAgent(FakeAgent):
    """The fake agent, each run making three model calls first: two of ``gpt-test`` (its
    provider reports one of them) and one of ``gpt-mini`` (reported)."""

    @override
    async def run(self, thread_id: str, turn: Turn) -> AsyncGenerator[AgentEvent, None]:
        yield ModelUsage(model="gpt-test", input_tokens=1000, output_tokens=200, cached_tokens=300)
        yield ModelUsage(model="gpt-test", input_tokens=None, output_tokens=None)
        yield ModelUsage(model="gpt-mini", input_tokens=40, output_tokens=10)
        async for event in super().run(thread_id, turn):
            yield event


def _panel_query(title: str) -> str:
    (panel,) = [panel for panel in dashboard_panels() if panel["title"] == title]
    (target,) = panel["targets"]
    return runnable(target["expr"])


async def _values(api: Api, title: str, *labels: str) -> dict[tuple[str, ...], float]:
    result = await api.query(_panel_query(title))
    return {
        tuple(row["metric"].get(label, "") for label in labels): float(row["value"][1])
        for row in result
    }


async def test_the_usage_panels_show_the_daemons_model_calls(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "state", usage={"prices": PRICES})
    channel = FakeChannel()
    async with running(settings, [channel], MeteredAgent()) as daemon:
        assert daemon.daemon.http is not None
        target = f"127.0.0.1:{daemon.daemon.http.port}"
        async with prometheus(scrape_config(tmp_path, target), tmp_path) as api:
            await channel.inject(dm("first", message_id="1"))
            await channel.wait_text("echo: first")

            async def scraped() -> bool:  # the series exist before the second turn adds to them
                return len(await api.query('switchboard_model_calls_total{model="gpt-test"}')) == 2

            await eventually(scraped, within=15, every=0.1)
            await channel.inject(dm("second", message_id="2"))
            await channel.wait_text("echo: second")
            shares: dict[tuple[str, ...], float] = {}

            async def counted() -> bool:  # the second turn's calls are in the rates
                nonlocal shares
                shares = await _values(api, UNREPORTED, "model")
                return shares.get(("gpt-test",), 0.0) > 0

            await eventually(counted, within=15, every=0.1)
            tokens = await _values(api, TOKENS, "model", "kind")
            cost = await _values(api, COST, "channel")
    assert shares == {("gpt-test",): pytest.approx(0.5), ("gpt-mini",): 0.0}
    assert set(tokens) == {
        ("gpt-test", "input"),
        ("gpt-test", "output"),
        ("gpt-test", "cached"),
        ("gpt-mini", "input"),
        ("gpt-mini", "output"),
    }
    assert all(value > 0 for value in tokens.values()), tokens
    assert tokens["gpt-test", "input"] > tokens["gpt-test", "output"] > tokens["gpt-mini", "input"]
    assert set(cost) == {("fake",)}
    assert cost["fake",] > 0
