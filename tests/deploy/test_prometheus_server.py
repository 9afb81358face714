"""A real Prometheus server scrapes a running daemon with the shipped rules loaded: every rule
group evaluates healthily, the daemon's series arrive, an alert goes pending on the live
series when a channel drops, and every dashboard query is PromQL Prometheus accepts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.bot.harness import make_settings, running
from tests.deploy.prometheus_server import Api, prometheus, scrape_config
from tests.deploy.support import NOT_INSTALLED, PROMETHEUS, dashboard_exprs, rule_groups, runnable
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import FakeChannel
from tests.fakes.common.waiting import eventually

pytestmark = pytest.mark.skipif(PROMETHEUS is None, reason=NOT_INSTALLED.format("prometheus"))

NEVER = "0001-01-01T00:00:00Z"
"""``lastEvaluation`` of a group not evaluated yet."""


async def test_prometheus_scrapes_the_daemon_and_evaluates_the_rules(tmp_path: Path) -> None:
    channel = FakeChannel()
    async with running(make_settings(tmp_path / "state"), [channel], FakeAgent()) as daemon:
        assert daemon.daemon.http is not None
        target = f"127.0.0.1:{daemon.daemon.http.port}"
        async with prometheus(scrape_config(tmp_path, target), tmp_path) as api:
            groups: list[dict[str, Any]] = []

            async def evaluated() -> bool:
                nonlocal groups
                groups = (await api.get("/api/v1/rules"))["groups"]
                return bool(groups) and all(
                    group["lastEvaluation"] != NEVER
                    and all(rule["health"] == "ok" for rule in group["rules"])
                    for group in groups
                )

            async def recorded() -> bool:
                """A recording rule has seen the daemon's series: scraped, then evaluated."""
                return bool(await api.query('switchboard:outbox_rows:max{state="dead"}'))

            await eventually(recorded, within=15, every=0.1)
            await eventually(evaluated, within=10, every=0.1)
            assert {group["name"] for group in groups} == {g["name"] for g in rule_groups()}

            (up,) = await api.query("switchboard_channel_up")
            assert up["metric"] == {
                "__name__": "switchboard_channel_up",
                "channel": "fake",
                "instance": target,
                "job": "switchboard",
            }
            assert up["value"][1] == "1"
            # The restart alerts read a process start from this timestamp.
            assert len(await api.query("process_start_time_seconds")) == 1
            (replica,) = await api.query("switchboard_replica_info")
            assert replica["metric"]["backend"] == "sqlite"

            for expr in dashboard_exprs():
                await api.query(runnable(expr))  # asserts Prometheus accepted it

            health = daemon.kernel.hub.reporter("fake")
            health.disconnected("dropped by the test")
            try:
                alert = await _pending(api, "SwitchboardChannelDown", target)
            finally:
                health.connected()
    assert alert["labels"]["channel"] == "fake"
    assert alert["labels"]["severity"] == "critical"
    # The description's template asked Prometheus which replica serves there.
    assert f"(replica {replica['metric']['replica']})" in alert["annotations"]["description"]


async def _pending(api: Api, name: str, instance: str) -> dict[str, Any]:
    """The alert ``name`` of ``instance`` once it is pending (its ``for:`` is minutes long)."""
    found: list[dict[str, Any]] = []

    async def pending() -> bool:
        alerts: list[dict[str, Any]] = (await api.get("/api/v1/alerts"))["alerts"]
        found[:] = [
            alert
            for alert in alerts
            if alert["labels"]["alertname"] == name
            and alert["labels"].get("instance") == instance
            and alert["state"] == "pending"
        ]
        return bool(found)

    await eventually(pending, within=10, every=0.1)
    return found[0]
