"""An aiohttp app served on 127.0.0.1:0 from its own thread and its own event loop."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from aiohttp import web

from tests.fakes.loop_thread import LoopThread

Hook = Callable[[], Awaitable[None]]


class ThreadedServer:
    def __init__(self, name: str, app: web.Application, *, on_start: Hook, on_stop: Hook) -> None:
        self.name = name
        self.port = 0
        self._app = app
        self._on_start = on_start
        self._on_stop = on_stop
        self._thread = LoopThread(name)
        self._runner: web.AppRunner | None = None

    def start(self) -> None:
        self._thread.start(self._astart)

    def stop(self) -> None:
        self._thread.stop(self._astop, timeout=15)

    async def _astart(self) -> None:
        self._runner = web.AppRunner(self._app, shutdown_timeout=1.0, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        await self._on_start()

    async def _astop(self) -> None:
        await self._on_stop()
        if self._runner is not None:
            await self._runner.cleanup()
        await asyncio.get_running_loop().shutdown_asyncgens()
