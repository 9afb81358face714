"""A fake's server: an aiohttp app on 127.0.0.1:0, served from an event loop on its own
daemon thread, and the ``with fake:`` lifecycle around it.

A fake that shares the test's loop can be starved by it (and deadlocks SDKs that block the
loop), so each fake runs on a loop of its own (design §17, "Issues that affect every
platform").
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any, Generic, Self, TypeVar

from aiohttp import web

from tests.fakes.common.records import Guard

Step = Callable[[], Coroutine[Any, Any, None]]


@asynccontextmanager
async def serve_app(app: web.Application) -> AsyncIterator[str]:
    """``app`` on 127.0.0.1 at a free port, on the running loop (a test's receiver, not a
    fake); yields its origin."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


class LoopThread:
    def __init__(self, name: str) -> None:
        self.name = name
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def start(self, setup: Step, *, timeout: float = 10.0) -> None:
        """Start the thread and run ``setup`` on its loop, waiting for it to finish."""
        loop = asyncio.new_event_loop()
        self.loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name=self.name, daemon=True)
        self._thread.start()
        asyncio.run_coroutine_threadsafe(setup(), loop).result(timeout=timeout)

    def stop(self, teardown: Step, *, timeout: float = 10.0) -> None:
        """Run ``teardown`` on the loop, then stop the loop and join the thread."""
        loop, thread = self.loop, self._thread
        if loop is None or thread is None:
            return
        asyncio.run_coroutine_threadsafe(teardown(), loop).result(timeout=timeout)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()
        self.loop = self._thread = None


class LoopServer:
    """A server run from its own ``LoopThread``: ``with`` (or ``start``/``stop``) runs it.

    Subclasses say how to set up and tear down on that loop (``_astart``/``_astop``); an
    aiohttp one calls ``_listen(app)`` and ``_close()`` there.
    """

    def __init__(self, name: str, *, label: str = "the fake", stop_timeout: float = 10.0) -> None:
        self._thread = LoopThread(name)
        self._label = label
        self._stop_timeout = stop_timeout
        self._runner: web.AppRunner | None = None
        self.port = 0

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        self._thread.start(self._astart)

    def stop(self) -> None:
        self._thread.stop(self._astop, timeout=self._stop_timeout)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        loop = self._thread.loop
        if loop is None:
            raise RuntimeError(f"{self._label} is not running")
        return loop

    def run(self, coro: Coroutine[Any, Any, Any], timeout: float = 10.0) -> Any:
        """Run a coroutine on the server's loop and wait for it (never call from that loop)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=timeout)

    async def _astart(self) -> None:
        raise NotImplementedError

    async def _astop(self) -> None:
        raise NotImplementedError

    async def _listen(self, app: web.Application, *, cancel_handlers: bool = False) -> None:
        """Serve ``app`` on 127.0.0.1 at a free port (``self.port``); on the server's loop."""
        self._runner = web.AppRunner(
            app, shutdown_timeout=1.0, access_log=None, handler_cancellation=cancel_handlers
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])

    async def _close(self) -> None:
        """Shut the app down and finish the loop's async generators; on the server's loop."""
        if self._runner is not None:
            await self._runner.cleanup()
        await asyncio.get_running_loop().shutdown_asyncgens()


Server = TypeVar("Server", bound=LoopServer)


class LoopbackFake(Generic[Server]):
    """The test-facing lifecycle of a fake: ``with fake:`` (or ``start``/``stop``) runs its
    server; stopping marks its ``Guard`` closed first, which ends every wait."""

    _guard: Guard
    _server: Server

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        self._server.start()

    def stop(self) -> None:
        self._guard.close()
        self._server.stop()

    @property
    def origin(self) -> str:
        return self._server.origin
