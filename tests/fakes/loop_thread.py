"""An event loop on its own daemon thread, for the loopback fakes.

A fake that shares the test's loop can be starved by it (and deadlocks SDKs that block the
loop), so each fake runs on a loop of its own (design §17, "Issues that affect every
platform").
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any, Self

Step = Callable[[], Coroutine[Any, Any, None]]


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
    """A fake served from its own ``LoopThread``: ``with`` (or ``start``/``stop``) runs it.

    Subclasses say how to set up and tear down on that loop (``_astart``/``_astop``).
    """

    def __init__(self, name: str) -> None:
        self._thread = LoopThread(name)

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
        self._thread.stop(self._astop)

    async def _astart(self) -> None:
        raise NotImplementedError

    async def _astop(self) -> None:
        raise NotImplementedError
