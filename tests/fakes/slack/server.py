"""The fake Slack's aiohttp app, served on 127.0.0.1:0 from its own thread and event loop."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web
from typing_extensions import override

from tests.fakes.common.server import LoopServer

Hook = Callable[[], Awaitable[None]]


class ThreadedServer(LoopServer):
    def __init__(self, name: str, app: web.Application, *, on_start: Hook, on_stop: Hook) -> None:
        super().__init__(name, label="FakeSlack", stop_timeout=15)
        self.name = name
        self._app = app
        self._on_start = on_start
        self._on_stop = on_stop

    @override
    async def _astart(self) -> None:
        await self._listen(self._app)
        await self._on_start()

    @override
    async def _astop(self) -> None:
        await self._on_stop()
        await self._close()
