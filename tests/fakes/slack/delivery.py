"""Inbound side of the fake: Socket Mode websockets and signed HTTP event delivery.

Envelopes wait in one outbox until a target exists (a live socket, or an HTTP URL). An
``events_api`` envelope that is not acked within ``ack_timeout_s`` is sent again under a new
envelope id with ``retry_attempt + 1``, at most ``MAX_RETRIES`` times, as Slack does.
``ack_timeouts_s`` overrides the timeout of an event's first deliveries (by retry attempt), so
a test can have lost acks retried quickly and still give the ack that counts plenty of time.
Interactive payloads are never retried. Everything but the loop-owned socket objects is
guarded by the fake's one lock; loop-side methods run only on the fake's own thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import urllib.parse
import uuid
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any

import aiohttp
from aiohttp import WSCloseCode, WSMsgType, web

from tests.fakes.common.push import Timers
from tests.fakes.common.records import Guard
from tests.fakes.slack.payloads import sign
from tests.fakes.slack.records import EVENTS_API, MAX_RETRIES, Delivery, Envelope
from tests.fakes.slack.world import World

Frame = tuple[str, Envelope | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class SignedPost:
    """A request Slack signs with the app's signing secret (or, for tests, wrongly)."""

    target: str
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    bad_signature: bool = False
    timestamp: int | None = None
    timeout: float | None = None  # None: the ack timeout, as for event delivery


@dataclass(eq=False, slots=True, kw_only=True)
class _Socket:
    ws: web.WebSocketResponse
    request: web.Request
    frames: asyncio.Queue[Frame] = field(default_factory=asyncio.Queue)
    sender: asyncio.Task[None] | None = None
    in_flight: Envelope | None = None
    muted: bool = False  # stalled: no pongs, no deliveries, acks lost


class Deliverer:
    def __init__(self, world: World, guard: Guard, signing_secret: str) -> None:
        self.world = world
        self.guard = guard
        self.secret = signing_secret
        # guarded state
        self.ack_timeout_s = 3.0
        self.ack_timeouts_s: tuple[float, ...] = ()
        self.withholding = False
        self.http_target: str | None = None
        self.outbox: deque[Envelope] = deque()
        self.latest: dict[str, Envelope] = {}  # event_id -> newest envelope carrying it
        self.acked: set[str] = set()
        self.ack_log: list[str] = []
        self.ack_payloads: dict[str, dict[str, Any]] = {}
        self.deliveries: list[Delivery] = []
        self.connections = 0
        # loop-owned
        self._loop: asyncio.AbstractEventLoop | None = None
        self._session: aiohttp.ClientSession | None = None
        self._sockets: list[_Socket] = []
        self._active: _Socket | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._timers = Timers()
        self._stopping = False

    # ------------------------------------------------------------------ any thread

    def submit(self, envelope: Envelope) -> None:
        with self.guard:
            if envelope.event_id is not None:
                self.latest[envelope.event_id] = envelope
            self.outbox.append(envelope)
        self.call(self._pump)

    def retry_of(self, envelope: Envelope, reason: str) -> Envelope:
        return replace(
            envelope,
            envelope_id=str(uuid.uuid4()),
            retry_attempt=envelope.retry_attempt + 1,
            retry_reason=reason,
        )

    def ack_timeout_of(self, envelope: Envelope) -> float:
        """How long ``envelope`` waits for its ack (the caller holds the guard)."""
        if envelope.retry_attempt < len(self.ack_timeouts_s):
            return self.ack_timeouts_s[envelope.retry_attempt]
        return self.ack_timeout_s

    def call(self, callback: Any, *args: Any) -> None:
        """Run ``callback`` on the fake's loop, in submission order."""
        if self._loop is None:
            raise RuntimeError("FakeSlack is not running")
        self._loop.call_soon_threadsafe(callback, *args)

    def run(self, coro: Any, timeout: float) -> Any:
        """Run a coroutine on the fake's loop and wait for it (never from that loop)."""
        if self._loop is None:
            raise RuntimeError("FakeSlack is not running")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=timeout)

    # ------------------------------------------------------------------ lifecycle (loop)

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._session = aiohttp.ClientSession()

    async def stop(self) -> None:
        self._stopping = True
        self._timers.cancel()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for sock in list(self._sockets):
            with contextlib.suppress(TimeoutError, ConnectionError):
                await asyncio.wait_for(
                    sock.ws.close(code=WSCloseCode.GOING_AWAY, message=b"server shutdown"), 1.0
                )
        if self._session is not None:
            await self._session.close()

    # ------------------------------------------------------------------ Socket Mode (loop)

    async def websocket(self, request: web.Request) -> web.StreamResponse:
        with self.guard:
            valid = request.query.get("ticket", "") in self.world.tickets
        if not valid:
            raise web.HTTPUnauthorized(text="invalid_ticket")
        ws = web.WebSocketResponse(autoping=False, timeout=1.0)
        await ws.prepare(request)
        sock = _Socket(ws=ws, request=request)
        sock.sender = asyncio.create_task(self._send_loop(sock), name="fake-slack:ws-send")
        self._sockets.append(sock)
        self._active = sock
        with self.guard:
            self.connections += 1
        sock.frames.put_nowait((json.dumps(self._hello()), None))
        self._pump()
        try:
            await self._read_loop(sock)
        finally:
            self._sockets.remove(sock)
            await self._detach(sock)
        return ws

    def _hello(self) -> dict[str, Any]:
        return {
            "type": "hello",
            "num_connections": len(self._sockets),
            "debug_info": {"host": "fake", "approximate_connection_time": 3600},
            "connection_info": {"app_id": self.world.ids.app_id},
        }

    async def _read_loop(self, sock: _Socket) -> None:
        async for message in sock.ws:
            if message.type == WSMsgType.PING and not sock.muted:
                await sock.ws.pong(message.data)
            elif message.type == WSMsgType.TEXT and not sock.muted:
                self._on_text(message.data)

    def _on_text(self, data: str) -> None:
        try:
            frame = json.loads(data)
        except ValueError:
            return
        envelope_id = frame.get("envelope_id") if isinstance(frame, dict) else None
        if not isinstance(envelope_id, str):
            return
        with self.guard:
            self.ack_log.append(envelope_id)
            if isinstance(frame.get("payload"), dict):
                self.ack_payloads[envelope_id] = frame["payload"]
            if not self.withholding:
                self.acked.add(envelope_id)

    async def _send_loop(self, sock: _Socket) -> None:
        while True:
            text, envelope = await sock.frames.get()
            sock.in_flight = envelope
            try:
                await sock.ws.send_str(text)
            except (ConnectionError, RuntimeError):
                return  # _detach requeues what is left, the in-flight envelope included
            sock.in_flight = None
            if envelope is not None:
                self._sent(envelope, via="socket", status=None)

    async def _detach(self, sock: _Socket) -> None:
        """Stop using a socket; envelopes it never sent go back to the front of the outbox."""
        if self._active is sock:
            self._active = None
        if sock.sender is not None:
            sock.sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sock.sender
        leftovers = [sock.in_flight] if sock.in_flight is not None else []
        while not sock.frames.empty():
            envelope = sock.frames.get_nowait()[1]
            if envelope is not None:
                leftovers.append(envelope)
        sock.in_flight = None
        with self.guard:
            self.outbox.extendleft(reversed(leftovers))
        self._pump()

    def disconnect(self, reason: str) -> None:
        """Send ``disconnect`` on the live socket; later envelopes wait for the next one."""
        sock = self._active
        if sock is None:
            return
        self._active = None
        frame = {"type": "disconnect", "reason": reason, "debug_info": {"host": "fake"}}
        sock.frames.put_nowait((json.dumps(frame), None))

    def drop(self) -> None:
        sock = self._active
        if sock is not None and sock.request.transport is not None:
            self._active = None
            sock.request.transport.abort()

    def stall(self) -> None:
        sock = self._active
        if sock is not None:
            sock.muted = True
            self._spawn(self._detach(sock))

    # ------------------------------------------------------------------ dispatch (loop)

    def kick(self) -> None:
        """Deliver what waits in the outbox (after the target changed); any thread."""
        self.call(self._pump)

    def _pump(self) -> None:
        if self._stopping:
            return
        with self.guard:
            target = self.http_target
            if target is None and self._active is None:
                return
            batch = list(self.outbox)
            self.outbox.clear()
        for envelope in batch:
            if target is not None:
                self._spawn(self._post_envelope(envelope, target))
            elif self._active is not None:
                self._active.frames.put_nowait((json.dumps(envelope.to_socket()), envelope))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _sent(self, envelope: Envelope, *, via: str, status: int | None) -> None:
        with self.guard:
            delivery = Delivery(
                envelope_id=envelope.envelope_id,
                kind=envelope.kind,
                event_id=envelope.event_id,
                retry_attempt=envelope.retry_attempt,
                retry_reason=envelope.retry_reason,
                via=via,
                status=status,
            )
            self.deliveries.append(delivery)
            timeout = self.ack_timeout_of(envelope)
        if envelope.kind == EVENTS_API and via == "socket":
            self._arm(envelope, timeout, "timeout")

    def _arm(self, envelope: Envelope, timeout: float, reason: str) -> None:
        """Retry ``envelope`` after ``timeout`` unless it was acked by then."""
        if self._loop is None or self._stopping:
            return
        self._timers.later(timeout, lambda: self._deadline(envelope, reason), self._loop)

    def _deadline(self, envelope: Envelope, reason: str) -> None:
        with self.guard:
            if envelope.envelope_id in self.acked or envelope.retry_attempt >= MAX_RETRIES:
                return
            retry = self.retry_of(envelope, reason)
            if retry.event_id is not None:
                self.latest[retry.event_id] = retry
            self.outbox.append(retry)
        self._pump()

    # ------------------------------------------------------------------ HTTP mode (loop)

    async def _post_envelope(self, envelope: Envelope, target: str) -> None:
        """POST one envelope; an event not answered with 2xx in time is retried once
        ``ack_timeout_s`` has passed since the POST began."""
        payload = json.dumps(envelope.payload)
        if envelope.kind == EVENTS_API:
            body, content_type = payload.encode(), "application/json"
        else:
            body = urllib.parse.urlencode({"payload": payload}).encode()
            content_type = "application/x-www-form-urlencoded"
        extra: dict[str, str] = {}
        if envelope.kind == EVENTS_API and envelope.retry_attempt:
            extra = {
                "X-Slack-Retry-Num": str(envelope.retry_attempt),
                "X-Slack-Retry-Reason": envelope.retry_reason,
            }
        with self.guard:
            timeout = self.ack_timeout_of(envelope)
        started = time.monotonic()
        post = SignedPost(
            target=target, body=body, content_type=content_type, headers=extra, timeout=timeout
        )
        status, _ = await self.post(post)
        answered = status is not None and 200 <= status < 300
        with self.guard:
            if answered:
                self.ack_log.append(envelope.envelope_id)
            acked = answered and not self.withholding
            if acked:
                self.acked.add(envelope.envelope_id)
            remaining = timeout - (time.monotonic() - started)
        self._sent(envelope, via="http", status=status or None)
        if envelope.kind == EVENTS_API and not acked:
            reason = "http_error" if status else "http_timeout"
            reason = "connection_failed" if status is None else reason
            self._arm(envelope, max(remaining, 0.0), reason)

    async def post(self, post: SignedPost) -> tuple[int | None, bytes]:
        """POST a signed body; status 0 means timed out, None means no connection."""
        assert self._session is not None
        stamp = int(time.time()) if post.timestamp is None else post.timestamp
        secret = self.secret + "-wrong" if post.bad_signature else self.secret
        headers = {
            "Content-Type": post.content_type,
            "X-Slack-Request-Timestamp": str(stamp),
            "X-Slack-Signature": sign(secret, stamp, post.body),
            **post.headers,
        }
        with self.guard:
            seconds = self.ack_timeout_s if post.timeout is None else post.timeout
        limit = aiohttp.ClientTimeout(total=max(seconds, 0.1))
        try:
            async with self._session.post(
                post.target, data=post.body, headers=headers, timeout=limit, allow_redirects=False
            ) as response:
                return response.status, await response.read()
        except TimeoutError:
            return 0, b""
        except aiohttp.ClientError:
            return None, b""
