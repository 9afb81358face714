"""The stream side of the fake: the websocket a ticket opens, frames out, acks in.

CALLBACK and EVENT frames queue in one outbox and go, one at a time, to the newest live
socket that subscribed to them (a callback needs ``{"type": "CALLBACK", "topic": <its
topic>}``; an event ``{"type": "EVENT", "topic": "*"}`` or its own topic); the rest wait, as
does everything while no socket is live. SYSTEM frames (``ping``, ``disconnect``) go straight
to the live socket. Acks are checked strictly (``frames.parse_ack``): a malformed one, or one
naming a frame not delivered on that socket (or acked already), lands in ``protocol_errors``.

Redelivery (``Redeliver``, off by default) checks each delivery ``after_s`` later: unless it
was acked 200 by then, the frame goes out again with the same ``messageId`` and data, as it
does at once for deliveries whose socket closed before their ack (at most ``times`` times
per message). Everything here runs on the fake's loop except the methods marked thread-safe.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections import deque
from collections.abc import Coroutine
from dataclasses import dataclass, field, replace
from typing import Any

from aiohttp import WSMsgType, web

from tests.fakes.common.push import Timers, Wakeup, abort_newest
from tests.fakes.common.records import Guard, Redeliver
from tests.fakes.dingtalk import frames
from tests.fakes.dingtalk.frames import CALLBACK, DISCONNECT, EVENT, PING, SYSTEM, Outgoing
from tests.fakes.dingtalk.gateway import Subscriptions
from tests.fakes.dingtalk.records import Ack, Delivery
from tests.fakes.dingtalk.world import World

DISCONNECT_GRACE_S = 2.0  # close a socket told to disconnect this long after, ack or not


@dataclass(eq=False, slots=True, kw_only=True)
class Flight:
    """One delivery of a frame on one socket, and what became of it."""

    item: Outgoing
    ack_code: int | None = None
    settled: bool = False  # the redelivery check (or the socket's close) dealt with it


@dataclass(eq=False, slots=True, kw_only=True)
class Conn:
    number: int
    connection_id: str
    subscriptions: Subscriptions
    ws: web.WebSocketResponse
    request: web.Request
    open: bool = True
    draining: bool = False  # told to disconnect: nothing new goes out on it
    flights: list[Flight] = field(default_factory=list)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def takes(self, item: Outgoing) -> bool:
        if item.kind == CALLBACK:
            return (CALLBACK, item.topic) in self.subscriptions
        if item.kind == EVENT:
            return bool({(EVENT, "*"), (EVENT, item.topic)} & self.subscriptions)
        return True


class Stream:
    def __init__(self, guard: Guard, world: World) -> None:
        self._guard = guard
        self._world = world
        # guarded state
        self.conns: list[Conn] = []
        self.outbox: deque[Outgoing] = deque()
        self.deliveries: list[Delivery] = []
        self.acks: list[Ack] = []
        self.protocol_errors: list[str] = []
        self.originals: dict[str, Outgoing] = {}  # message_id -> the frame, for redelivery
        self.attempts: dict[str, int] = {}  # message_id -> the highest attempt queued
        self.auto_redeliveries: dict[str, int] = {}
        self.redeliver: Redeliver | None = None
        # loop-owned
        self._wake = Wakeup()
        self._sender: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._timers = Timers()

    # ------------------------------------------------------------------ lifecycle (loop)

    async def start(self) -> None:
        self._wake.bind()
        self._sender = asyncio.create_task(
            self._wake.pump(self._send_one), name="fake-dingtalk:sender"
        )

    async def stop(self) -> None:
        self._timers.cancel()
        tasks = [t for t in (self._sender, *self._tasks) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for conn in self.live():
            with contextlib.suppress(TimeoutError, ConnectionError):
                await asyncio.wait_for(conn.ws.close(message=b"server shutdown"), 1.0)

    # ------------------------------------------------------------------ thread-safe

    def submit(self, item: Outgoing) -> None:
        with self._guard:
            self.originals[item.message_id] = item
            self.attempts[item.message_id] = item.attempt
            self.outbox.append(item)
        self.kick()

    def requeue(self, message_id: str) -> bool:
        """Queue ``message_id`` again (same id and data, next attempt) unless it is queued."""
        with self._guard:
            if any(item.message_id == message_id for item in self.outbox):
                return False
            attempt = self.attempts[message_id] + 1
            self.attempts[message_id] = attempt
            self.outbox.append(replace(self.originals[message_id], attempt=attempt))
        self.kick()
        return True

    def kick(self) -> None:
        self._wake.kick()

    def live(self) -> list[Conn]:
        with self._guard:
            return [c for c in self.conns if c.open]

    def target(self) -> Conn | None:
        """The newest live socket not told to disconnect: where new frames go."""
        with self._guard:
            usable = [c for c in self.conns if c.open and not c.draining]
            return usable[-1] if usable else None

    def acked(self, message_id: str) -> bool:
        with self._guard:
            return any(a.message_id == message_id and a.code == 200 for a in self.acks)

    def unacked(self) -> list[str]:
        """Message ids delivered that never got an ack, in first-delivery order."""
        with self._guard:
            answered = {a.message_id for a in self.acks}
            ids = dict.fromkeys(d.message_id for d in self.deliveries)
            return [m for m in ids if m not in answered]

    # ------------------------------------------------------------------ the socket (loop)

    async def serve(self, request: web.Request, subscriptions: Subscriptions) -> web.StreamResponse:
        ws = web.WebSocketResponse(autoping=True, timeout=1.0)
        await ws.prepare(request)
        with self._guard:
            conn = Conn(
                number=len(self.conns) + 1,
                connection_id=World.new_id("", 16),
                subscriptions=subscriptions,
                ws=ws,
                request=request,
            )
            self.conns.append(conn)
        self.kick()
        try:
            async for message in ws:
                if message.type == WSMsgType.TEXT:
                    self._on_text(conn, message.data)
                elif message.type == WSMsgType.BINARY:
                    self._error(conn, "binary frame (the stream protocol is JSON text)")
        finally:
            self._closed(conn)
        return ws

    def _error(self, conn: Conn, what: str) -> None:
        with self._guard:
            self.protocol_errors.append(f"connection {conn.number}: {what}")

    def _on_text(self, conn: Conn, raw: str) -> None:
        try:
            ack = frames.parse_ack(raw)
        except frames.BadAck as error:
            self._error(conn, str(error))
            return
        with self._guard:
            flight = next(
                (
                    f
                    for f in conn.flights
                    if f.item.message_id == ack.message_id and f.ack_code is None
                ),
                None,
            )
            if flight is None:
                known = any(f.item.message_id == ack.message_id for f in conn.flights)
                what = "a second ack for" if known else "an ack for unknown messageId"
                self._error(conn, f"{what} {ack.message_id!r}")
                return
            flight.ack_code = ack.code
            self.acks.append(
                Ack(
                    message_id=ack.message_id,
                    code=ack.code,
                    message=ack.message,
                    data=ack.data,
                    connection=conn.number,
                    at=time.monotonic(),
                )
            )
        item = flight.item
        if item.kind == SYSTEM and item.topic == PING and ack.data != item.data:
            self._error(
                conn, f"ping ack {ack.message_id!r} must echo {item.data}, got {ack.data!r}"
            )
        if item.kind == SYSTEM and item.topic == DISCONNECT:
            self._spawn(self._close(conn))

    def _closed(self, conn: Conn) -> None:
        """A socket ended: with redelivery on, what it never acked goes out again."""
        with self._guard:
            conn.open = False
            policy = self.redeliver
            if policy is not None:
                for flight in conn.flights:
                    if (
                        flight.ack_code is None
                        and not flight.settled
                        and flight.item.kind != SYSTEM
                    ):
                        flight.settled = True
                        self._redeliver_auto(flight.item.message_id, policy)
        self.kick()

    async def _close(self, conn: Conn) -> None:
        if conn.open:
            with contextlib.suppress(ConnectionError, TimeoutError):
                await conn.ws.close(message=b"disconnect")

    async def drop(self) -> bool:
        """Abort the newest live socket's TCP stream: no close frame."""
        return abort_newest(self.live(), self._guard)

    # ------------------------------------------------------------------ frames out (loop)

    async def _send_one(self) -> bool:
        with self._guard:
            conn = self.target()
            item = next((i for i in self.outbox if conn.takes(i)), None) if conn else None
            if conn is None or item is None:
                return False
            self.outbox.remove(item)
            flight, delivery = self._fly(conn, item)
        if not await self._write(conn, item):
            with self._guard:
                conn.flights.remove(flight)
                self.deliveries.remove(delivery)
                self.outbox.appendleft(item)
            return True
        with self._guard:
            policy = self.redeliver
        if policy is not None:
            self._schedule(policy.after_s, flight)
        return True

    def _fly(self, conn: Conn, item: Outgoing) -> tuple[Flight, Delivery]:
        """Record a delivery before it is written, so an ack can never outrun it."""
        flight = Flight(item=item)
        delivery = Delivery(
            message_id=item.message_id,
            kind=item.kind,
            topic=item.topic,
            connection=conn.number,
            attempt=item.attempt,
            at=time.monotonic(),
        )
        with self._guard:
            conn.flights.append(flight)
            self.deliveries.append(delivery)
        return flight, delivery

    async def _write(self, conn: Conn, item: Outgoing) -> bool:
        text = frames.encode(item, app_id=self._world.ids.app_id, connection_id=conn.connection_id)
        async with conn.lock:
            try:
                await conn.ws.send_str(text)
            except (ConnectionError, RuntimeError):
                with self._guard:
                    conn.open = False
                return False
        return True

    async def send_system(self, topic: str, data: dict[str, Any]) -> str:
        """Write a SYSTEM frame to the live socket; returns its messageId. After a
        ``disconnect`` the socket takes nothing new and closes once acked (or after 2 s)."""
        conn = self.target()
        if conn is None:
            raise RuntimeError("no live stream connection")
        item = Outgoing(message_id=new_message_id(), kind=SYSTEM, topic=topic, data=data)
        with self._guard:
            conn.draining = topic == DISCONNECT or conn.draining
        self._fly(conn, item)
        if not await self._write(conn, item):
            raise RuntimeError("the live stream connection closed")
        if topic == DISCONNECT:
            self._timers.later(DISCONNECT_GRACE_S, lambda: self._spawn(self._close(conn)))
        return item.message_id

    # ------------------------------------------------------------------ redelivery (loop)

    def _schedule(self, after_s: float, flight: Flight) -> None:
        if flight.item.kind != SYSTEM:
            self._timers.later(after_s, lambda: self._check(flight))

    def _check(self, flight: Flight) -> None:
        with self._guard:
            policy = self.redeliver
            if policy is None or flight.settled:
                return
            flight.settled = True
            if flight.ack_code != 200:
                self._redeliver_auto(flight.item.message_id, policy)

    def _redeliver_auto(self, message_id: str, policy: Redeliver) -> None:
        """Redeliver (guard held) unless acked 200 meanwhile or ``times`` is used up."""
        made = self.auto_redeliveries.get(message_id, 0)
        if self.acked(message_id) or made >= policy.times:
            return
        if self.requeue(message_id):
            self.auto_redeliveries[message_id] = made + 1

    # ------------------------------------------------------------------ plumbing (loop)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def new_message_id() -> str:
    """A frame ``messageId`` in the shape DingTalk uses (hex, dashes)."""
    raw = secrets.token_hex(16)
    return f"{raw[:8]}-{raw[8:12]}-{raw[12:16]}-{raw[16:20]}-{raw[20:]}"
