"""A real Prometheus server scrapes a running daemon with the shipped rules loaded: every rule
group evaluates healthily, the daemon's series arrive, an alert goes pending on the live
series when a channel drops, and every dashboard query is PromQL Prometheus accepts."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from tests.bot.harness import make_settings, running
from tests.deploy.support import (
    EXAMPLE_CONFIG,
    NOT_INSTALLED,
    PROMETHEUS,
    RULES,
    dashboard_exprs,
    rule_groups,
    runnable,
)
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import FakeChannel
from tests.fakes.common.waiting import eventually

pytestmark = pytest.mark.skipif(PROMETHEUS is None, reason=NOT_INSTALLED.format("prometheus"))

NEVER = "0001-01-01T00:00:00Z"
"""``lastEvaluation`` of a group not evaluated yet."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _config(tmp_path: Path, target: str) -> Path:
    """The example scrape config, scraping ``target`` every second with the shipped rules."""
    config: dict[str, Any] = yaml.safe_load(EXAMPLE_CONFIG.read_text(encoding="utf-8"))
    config["global"] = {
        "scrape_interval": "1s",
        "scrape_timeout": "1s",
        "evaluation_interval": "1s",
    }
    config["rule_files"] = [str(RULES)]
    (job,) = config["scrape_configs"]
    job["static_configs"] = [{"targets": [target]}]
    path = tmp_path / "prometheus.yml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


class Api:
    def __init__(self, session: aiohttp.ClientSession, base: str) -> None:
        self._session = session
        self._base = base

    async def get(self, path: str, **params: str) -> dict[str, Any]:
        async with self._session.get(self._base + path, params=params) as response:
            body: dict[str, Any] = await response.json()
        assert body["status"] == "success", body
        data: dict[str, Any] = body["data"]
        return data

    async def query(self, expr: str) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = (await self.get("/api/v1/query", query=expr))["result"]
        return result

    async def ready(self) -> bool:
        try:
            async with self._session.get(self._base + "/-/ready") as response:
                return response.status == 200
        except aiohttp.ClientConnectionError:
            return False


@contextlib.asynccontextmanager
async def prometheus(config: Path, tmp_path: Path) -> AsyncIterator[Api]:
    """A Prometheus server on a free loopback port, killed when the block ends."""
    assert PROMETHEUS is not None
    address = f"127.0.0.1:{_free_port()}"
    log = tmp_path / "prometheus.log"
    with log.open("wb") as output:
        process = await asyncio.create_subprocess_exec(
            PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address={address}",
            "--log.level=warn",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=output,
            stderr=output,
        )
    try:
        async with aiohttp.ClientSession() as session:
            api = Api(session, f"http://{address}")

            async def up() -> bool:
                if process.returncode is not None:
                    log_text = log.read_text(errors="replace")
                    raise AssertionError(f"prometheus exited {process.returncode}: {log_text}")
                return await api.ready()

            await eventually(up, within=15, every=0.1)
            yield api
    finally:
        if process.returncode is None:
            process.terminate()
            try:
                async with asyncio.timeout(5):
                    await process.wait()
            except TimeoutError:
                process.kill()
                await process.wait()


async def test_prometheus_scrapes_the_daemon_and_evaluates_the_rules(tmp_path: Path) -> None:
    channel = FakeChannel()
    async with running(make_settings(tmp_path / "state"), [channel], FakeAgent()) as daemon:
        assert daemon.daemon.http is not None
        target = f"127.0.0.1:{daemon.daemon.http.port}"
        async with prometheus(_config(tmp_path, target), tmp_path) as api:
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
