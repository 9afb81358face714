"""Loop-side plumbing of a fake that pushes frames over websockets: a sender woken from any
thread (``Wakeup``), callbacks run later and cancelled on stop (``Timers``), and cutting the
newest live socket (``abort_newest``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from aiohttp import web

from tests.fakes.common.records import Guard


class Wakeup:
    """An event on the fake's loop that wakes its sender; ``kick`` may be called anywhere."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._event: asyncio.Event | None = None

    def bind(self) -> None:
        """Attach to the running loop (the fake's, at start)."""
        self._loop = asyncio.get_running_loop()
        self._event = asyncio.Event()

    def kick(self) -> None:
        """Wake the sender (thread-safe; nothing happens before start or after the loop closed)."""
        loop, event = self._loop, self._event
        if loop is not None and event is not None and not loop.is_closed():
            loop.call_soon_threadsafe(event.set)

    def set(self) -> None:
        """Wake the sender from the fake's loop."""
        if self._event is not None:
            self._event.set()

    async def pump(self, send_one: Callable[[], Awaitable[bool]]) -> None:
        """The sender: on every wake-up, ``send_one()`` until it has nothing to send."""
        assert self._event is not None
        while True:
            await self._event.wait()
            self._event.clear()
            while await send_one():
                pass


class Timers:
    """Callbacks scheduled on the fake's loop, all cancelled when it stops."""

    def __init__(self) -> None:
        self._handles: set[asyncio.TimerHandle] = set()

    def later(
        self,
        delay: float,
        callback: Callable[[], object],
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        """Run ``callback`` after ``delay`` seconds on ``loop`` (default: the running one)."""
        handle: asyncio.TimerHandle | None = None

        def fire() -> None:
            if handle is not None:
                self._handles.discard(handle)
            callback()

        handle = (loop or asyncio.get_running_loop()).call_later(delay, fire)
        self._handles.add(handle)

    def cancel(self) -> None:
        for handle in self._handles:
            handle.cancel()
        self._handles.clear()


class Socket(Protocol):
    open: bool
    request: web.Request


def abort_newest(live: Sequence[Socket], guard: Guard) -> bool:
    """Abort the newest of the ``live`` sockets' TCP stream (no close frame); False if none."""
    if not live:
        return False
    conn = live[-1]
    with guard:
        conn.open = False
    transport = conn.request.transport
    if transport is not None:
        transport.abort()
    return True
