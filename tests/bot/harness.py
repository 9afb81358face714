"""Run the real daemon (bus, router, lanes, outbox, SQLite) with fake channels and agents."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp

from bot.app import Daemon, DaemonOptions, Overrides
from bot.config.settings import Settings
from bot.exit_codes import EXIT_OK
from bot.kernel import Kernel
from bot.metrics import DropReason
from bot.ports import AgentBackend, Channel, Store
from tests.fakes.common.waiting import eventually


def make_settings(state_dir: Path, **sections: Any) -> Settings:
    """Settings with open DMs and the given sections (plain dicts, validated by pydantic)."""
    data: dict[str, Any] = {
        "config_version": 1,
        "state_dir": str(state_dir),
        "access": {"dm_policy": "open", "admins": ["fake:root"]},
        "agent": {"run_timeout_s": 30},
        "daemon": {"shutdown_grace_s": 2},
        "http": {"host": "127.0.0.1", "port": 0},
    }
    for name, value in sections.items():
        base = data.get(name)
        data[name] = {**base, **value} if isinstance(base, dict) else value
    return Settings.model_validate(data)


class Running:
    def __init__(self, daemon: Daemon, task: asyncio.Task[int]) -> None:
        self.daemon = daemon
        self.task = task

    @property
    def kernel(self) -> Kernel:
        assert self.daemon.kernel is not None
        return self.daemon.kernel

    async def stop(self) -> int:
        self.daemon.request_stop()
        async with asyncio.timeout(10):
            return await self.task


@asynccontextmanager
async def started(daemon: Daemon) -> AsyncIterator[Running]:
    """Run ``daemon`` until the block ends; fail fast if it exits before it is ready."""
    task = asyncio.create_task(daemon.run(), name="test-daemon")
    ready = asyncio.create_task(daemon.ready.wait())
    async with asyncio.timeout(10):
        await asyncio.wait({task, ready}, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        ready.cancel()
        raise AssertionError(f"daemon exited early with {task.result()}")
    handle = Running(daemon, task)
    try:
        yield handle
    finally:
        if not task.done():
            assert await handle.stop() == EXIT_OK


@asynccontextmanager
async def started_without_waiting(daemon: Daemon) -> AsyncIterator[asyncio.Task[int]]:
    """Run ``daemon`` without waiting for it to be ready (tests of what happens while it
    starts); stopped when the block ends."""
    task = asyncio.create_task(daemon.run(), name="test-daemon")
    try:
        yield task
    finally:
        daemon.request_stop()
        async with asyncio.timeout(15):
            await task


@asynccontextmanager
async def running(
    settings: Settings,
    channels: Sequence[Channel],
    agent: AgentBackend,
    *,
    store: Store | None = None,
) -> AsyncIterator[Running]:
    """The daemon with injected channels and agent (the pipeline's core tests); ``store``
    replaces the one its settings name (several replicas on one PostgreSQL schema)."""
    overrides = Overrides(channels=list(channels), agent=agent, store=store)
    async with started(Daemon(settings, DaemonOptions(overrides=overrides))) as handle:
        yield handle


@asynccontextmanager
async def registry_daemon(
    settings: Settings, agent: AgentBackend, *, config_path: Path | None = None
) -> AsyncIterator[Daemon]:
    """The daemon as ``switchboard run`` builds it (channels from the registry), with only
    the agent replaced."""
    options = DaemonOptions(config_path=config_path, overrides=Overrides(agent=agent))
    async with started(Daemon(settings, options)) as handle:
        yield handle.daemon


async def http_get(daemon: Daemon, path: str) -> tuple[int, str]:
    """GET from the daemon's own HTTP server."""
    assert daemon.http is not None
    url = f"http://127.0.0.1:{daemon.http.port}{path}"
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status, await response.text()


INTAKE_OUTCOMES = frozenset({DropReason.DUPLICATE, DropReason.QUEUE_FULL})
"""Outcomes counted at intake: those messages never reach the router."""


def inbound_outcomes(kernel: Kernel) -> dict[str, int]:
    """The inbound metric by outcome, over all channels (zero counts left out)."""
    counts: dict[str, int] = {}
    for metric in kernel.delivery.counters.inbound_total.collect():
        for sample in metric.samples:
            if sample.name.endswith("_total") and sample.value:
                outcome = sample.labels["outcome"]
                counts[outcome] = counts.get(outcome, 0) + int(sample.value)
    return counts


def routed_count(kernel: Kernel) -> int:
    """Messages the router has finished with, from the inbound metric it counts once each."""
    counts = inbound_outcomes(kernel)
    return sum(n for outcome, n in counts.items() if outcome not in INTAKE_OUTCOMES)


async def routed(kernel: Kernel, count: int, within: float = 10.0) -> None:
    """Wait until the router has finished with ``count`` messages (all their effects recorded)."""

    async def done() -> bool:
        return routed_count(kernel) >= count

    await eventually(done, within)
