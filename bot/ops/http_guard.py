"""Keeping the HTTP server answering while clients try to hold it down (design §13).

aiohttp's server has no read timeout of its own for a request head or body (only the
keep-alive timer, which newer releases also start when a connection opens), and it accepts
every connection it is offered, so a few hundred half-sent requests used to hold the process
at its file-descriptor limit. No well-kept server we could put in front of aiohttp's
application does all three jobs below on our event loop, so this module is the smallest
extension over aiohttp's public pieces:

- ``ConnectionGuard.wrap`` wraps the server's protocol factory: a connection past
  ``http.max_connections`` gets a tiny 503 and is closed, never handed to aiohttp; one whose
  first request head has not arrived within ``http.header_timeout_s`` is closed (later heads
  on a keep-alive connection are bounded by aiohttp's keep-alive timer, set to the same value);
- ``ConnectionGuard.middleware`` closes the connection of a request whose body has not fully
  arrived ``http.body_timeout_s`` after its head (it never reads the body itself, so handlers
  that stream it, such as the push API, work as before);
- ``AcceptErrors`` makes asyncio's report of a failed ``accept()`` (``EMFILE``: out of file
  descriptors), made once per try, one log line per minute with a count.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final, cast

from aiohttp import web
from typing_extensions import override

logger = logging.getLogger(__name__)

REFUSAL: Final = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
)
REFUSAL_LINGER_S: Final = 1.0
"""How long a refused connection may take to read the 503 before it is cut."""
ACCEPT_FAILED: Final = "socket.accept() out of system resource"
ACCEPT_REPORT_EVERY_S: Final = 60.0

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ConnectionGuard:
    """Counts open connections and enforces the head and body deadlines."""

    def __init__(
        self, *, max_connections: int, header_timeout_s: float, body_timeout_s: float
    ) -> None:
        self.max_connections = max_connections
        self.header_timeout_s = header_timeout_s
        self.body_timeout_s = body_timeout_s
        self.open = 0
        self.refused = 0
        self._awaiting_head: dict[asyncio.BaseTransport, _Guarded] = {}

    def wrap(self, factory: Callable[[], asyncio.Protocol]) -> Callable[[], asyncio.Protocol]:
        """A protocol factory for ``loop.create_server`` around aiohttp's own."""

        def build() -> asyncio.Protocol:
            if self.open >= self.max_connections:
                self.refused += 1
                return _Refused()
            return _Guarded(self, factory())

        return build

    def track(self, transport: asyncio.BaseTransport, guarded: _Guarded | None) -> None:
        """Note a connection waiting for its first head (``None``: no longer waiting)."""
        if guarded is None:
            self._awaiting_head.pop(transport, None)
        else:
            self._awaiting_head[transport] = guarded

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        transport = request.transport
        if transport is not None and (waiting := self._awaiting_head.pop(transport, None)):
            waiting.head_arrived()
        if not request.body_exists or request.content.is_eof():
            return await handler(request)
        deadline = _BodyDeadline(request, self.body_timeout_s)
        try:
            return await handler(request)
        except Exception:
            if not deadline.fired:
                raise
            return web.Response(status=408)  # the connection is gone; nobody reads this
        finally:
            deadline.cancel()


class _Guarded(asyncio.Protocol):
    """aiohttp's protocol for one connection, counted and with a deadline for its head."""

    def __init__(self, guard: ConnectionGuard, inner: asyncio.Protocol) -> None:
        self._guard = guard
        self._inner = inner
        self._transport: asyncio.BaseTransport | None = None
        self._timer: asyncio.TimerHandle | None = None

    @override
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._guard.open += 1
        self._transport = transport
        self._guard.track(transport, self)
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(self._guard.header_timeout_s, self._late)
        self._inner.connection_made(transport)

    def head_arrived(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _late(self) -> None:
        self._timer = None
        if self._transport is not None:
            logger.debug(
                "http: no request head within %ss; connection closed", self._guard.header_timeout_s
            )
            self._transport.abort()  # type: ignore[attr-defined]

    @override
    def data_received(self, data: bytes) -> None:
        self._inner.data_received(data)

    @override
    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    @override
    def pause_writing(self) -> None:
        self._inner.pause_writing()

    @override
    def resume_writing(self) -> None:
        self._inner.resume_writing()

    @override
    def connection_lost(self, exc: Exception | None) -> None:
        self.head_arrived()
        self._guard.open -= 1
        if self._transport is not None:
            self._guard.track(self._transport, None)
        self._inner.connection_lost(exc)


class _Refused(asyncio.Protocol):
    """A connection over the bound: a 503, then closed once the client has read it."""

    def __init__(self) -> None:
        self._timer: asyncio.TimerHandle | None = None

    @override
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = cast(asyncio.WriteTransport, transport)  # a TCP connection's
        transport.write(REFUSAL)
        transport.write_eof()  # a half close: closing with unread input would reset instead
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(REFUSAL_LINGER_S, transport.abort)

    @override
    def data_received(self, data: bytes) -> None:
        """What the client sent is dropped unread."""

    @override
    def eof_received(self) -> bool | None:
        return False  # the client is done too: close

    @override
    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()


class _BodyDeadline:
    """Closes a request's connection if its body has not fully arrived in time."""

    def __init__(self, request: web.Request, timeout_s: float) -> None:
        self._request = request
        self._timeout_s = timeout_s
        self.fired = False
        self._timer = asyncio.get_running_loop().call_later(timeout_s, self._check)

    def _check(self) -> None:
        if self._request.content.is_eof():
            return
        self.fired = True
        logger.info(
            "http: the body of %s %s did not arrive within %ss; connection closed",
            self._request.method,
            ascii(self._request.path),
            self._timeout_s,
        )
        transport = self._request.transport
        if transport is not None:
            transport.abort()

    def cancel(self) -> None:
        self._timer.cancel()


class AcceptErrors:
    """The loop's exception handler while the server runs: failed ``accept()`` calls are one
    warning per ``ACCEPT_REPORT_EVERY_S`` with a count; everything else goes on as before."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._previous = loop.get_exception_handler()
        self._quiet_until = 0.0
        self._unreported = 0

    def install(self) -> None:
        self._loop.set_exception_handler(self)

    def uninstall(self) -> None:
        if self._loop.get_exception_handler() is self:
            self._loop.set_exception_handler(self._previous)

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if context.get("message") != ACCEPT_FAILED:
            if self._previous is not None:
                self._previous(loop, context)
            else:
                loop.default_exception_handler(context)
            return
        now = loop.time()
        if now < self._quiet_until:
            self._unreported += 1
            return
        logger.warning(
            "http: cannot accept connections: %s (%d more since the last report; the next "
            "report in %ds at the earliest; see http.max_connections and LimitNOFILE)",
            context.get("exception"),
            self._unreported,
            int(ACCEPT_REPORT_EVERY_S),
        )
        self._quiet_until = now + ACCEPT_REPORT_EVERY_S
        self._unreported = 0
