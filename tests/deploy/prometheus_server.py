"""A real Prometheus server for the monitoring tests: scraping a daemon every second with the
shipped rules loaded, and its HTTP API."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from tests.deploy.support import EXAMPLE_CONFIG, PROMETHEUS, RULES
from tests.fakes.common.waiting import eventually


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def scrape_config(tmp_path: Path, target: str) -> Path:
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
    address = f"127.0.0.1:{free_port()}"
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
