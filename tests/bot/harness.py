"""Run the real daemon (bus, router, lanes, outbox, SQLite) with fake channels and agents."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from bot.app import Daemon, DaemonOptions, Overrides
from bot.config import Settings
from bot.exit_codes import EXIT_OK
from bot.kernel import Kernel
from bot.ports import AgentBackend, Channel


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
async def running(
    settings: Settings, channels: Sequence[Channel], agent: AgentBackend
) -> AsyncIterator[Running]:
    daemon = Daemon(
        settings, DaemonOptions(overrides=Overrides(channels=list(channels), agent=agent))
    )
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
