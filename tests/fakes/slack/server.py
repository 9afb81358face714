"""An aiohttp app served on 127.0.0.1:0 from its own thread and its own event loop.

A fake that shares the test's loop can be starved by it (and deadlocks SDKs that block the
loop), so each fake gets a loop of its own (PLATFORMS.md, "Issues that affect every platform").
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable

from aiohttp import web

Hook = Callable[[], Awaitable[None]]


class ThreadedServer:
    def __init__(self, name: str, app: web.Application, *, on_start: Hook, on_stop: Hook) -> None:
        self.name = name
        self.port = 0
        self._app = app
        self._on_start = on_start
        self._on_stop = on_stop
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None

    def start(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name=self.name, daemon=True)
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._astart(), loop).result(timeout=10)

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        asyncio.run_coroutine_threadsafe(self._astop(), loop).result(timeout=15)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()
        self._loop = self._thread = None

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
