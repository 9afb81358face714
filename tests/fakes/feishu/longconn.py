"""The long connection: the ``/ws`` websocket, pongs, event frames out, acks in.

Events queue in an outbox and go to the newest live connection, one after another; with no
connection they wait for the next one (Feishu keeps them too). Frames carry headers
``type=event``, ``message_id`` (the frame id), ``sum``/``seq`` and ``trace_id``; the SDK
answers each with the same frame plus ``biz_rt`` and payload ``{"code": 200|500, "data"?}``.
Everything here runs on the fake's loop except ``submit``/``kick`` (thread-safe).

With ``Redeliver`` set (off by default) every delivery is checked ``after_s`` later: unless its
frame was acked 200 by then, the event goes out again under a new ``event_id`` (at most
``times`` redeliveries per message), as Feishu retries an event it saw no good ack for.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import secrets
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web

from tests.fakes.common.push import Timers, Wakeup, abort_newest
from tests.fakes.common.records import Guard, Redeliver
from tests.fakes.feishu import frames
from tests.fakes.feishu.auth import Credentials
from tests.fakes.feishu.inbound import with_event_id
from tests.fakes.feishu.records import Ack, Delivery, Redelivery


@dataclass(slots=True)
class Conn:
    number: int
    service_id: int
    ws: web.WebSocketResponse
    request: web.Request
    open: bool = True


@dataclass(frozen=True, slots=True)
class Outgoing:
    event_id: str
    event_type: str
    payload: dict[str, Any]
    parts: int = 1


class LongConn:
    def __init__(self, guard: Guard, creds: Credentials) -> None:
        self._guard = guard
        self._creds = creds
        self.conns: list[Conn] = []
        self.outbox: deque[Outgoing] = deque()
        self.deliveries: list[Delivery] = []
        self.acks: list[Ack] = []
        self.payloads: dict[str, dict[str, Any]] = {}  # event_id -> payload, for redelivery
        self.frame_events: dict[str, str] = {}  # frame id -> event_id
        self.pings = 0
        self.redeliver: Redeliver | None = None
        self.redeliveries: list[Redelivery] = []
        self.origins: dict[str, str] = {}  # redelivered event_id -> the first event_id
        self._timers = Timers()
        self._wake = Wakeup()
        self._task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ lifecycle (loop)

    async def start(self) -> None:
        self._wake.bind()
        self._task = asyncio.create_task(self._wake.pump(self._send_one), name="fake-feishu:sender")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._timers.cancel()
        for conn in self.live_conns():
            conn.open = False
            await conn.ws.close()

    # ------------------------------------------------------------------ thread-safe

    def submit(self, item: Outgoing) -> None:
        with self._guard:
            self.outbox.append(item)
            self.payloads[item.event_id] = item.payload
        self.kick()

    def kick(self) -> None:
        self._wake.kick()

    def live_conns(self) -> list[Conn]:
        with self._guard:
            return [c for c in self.conns if c.open]

    def unacked(self) -> list[str]:
        with self._guard:
            acked = {a.frame_id for a in self.acks}
            return [d.event_id for d in self.deliveries if d.frame_id not in acked]

    # ------------------------------------------------------------------ socket (loop)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        with self._guard:
            known = request.query.get("ticket") in self._creds.tickets
        service = request.query.get("service_id", "")
        if not known or not service.isdigit() or not request.query.get("device_id"):
            headers = {"handshake-status": "403", "handshake-msg": "invalid ticket"}
            return web.Response(status=403, headers=headers)
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        with self._guard:
            conn = Conn(len(self.conns) + 1, int(service), ws, request)
            self.conns.append(conn)
        self.kick()
        try:
            async for msg in ws:
                if msg.type == aiohttp.WSMsgType.BINARY:
                    await self._on_frame(conn, msg.data)
        finally:
            with self._guard:
                conn.open = False
        return ws

    async def _on_frame(self, conn: Conn, raw: bytes) -> None:
        frame = frames.parse(raw)
        if frame.method == frames.CONTROL and frame.headers.get("type") == "ping":
            with self._guard:
                self.pings += 1
                config = dict(self._creds.client_config)
            with contextlib.suppress(ConnectionError, RuntimeError):
                await conn.ws.send_bytes(frames.pong(conn.service_id, config))
        elif frame.method == frames.DATA:
            self._record_ack(conn, frame)

    def _record_ack(self, conn: Conn, frame: frames.Parsed) -> None:
        try:
            answer = json.loads(frame.payload or b"{}")
        except ValueError:
            answer = {}
        data = answer.get("data") if isinstance(answer, dict) else None
        if isinstance(data, str) and data:
            with contextlib.suppress(ValueError):
                data = json.loads(base64.b64decode(data))
        rt = frame.headers.get("biz_rt")
        frame_id = frame.headers.get("message_id", "")
        with self._guard:
            self.acks.append(
                Ack(
                    event_id=self.frame_events.get(frame_id, ""),
                    frame_id=frame_id,
                    code=int(answer.get("code", 0)) if isinstance(answer, dict) else 0,
                    data=data,
                    biz_rt_ms=int(rt) if rt and rt.isdigit() else None,
                    connection=conn.number,
                    at=time.monotonic(),
                )
            )

    async def drop(self) -> bool:
        """Abort the newest live connection's TCP stream (no close frame)."""
        return abort_newest(self.live_conns(), self._guard)

    async def close(self, code: int) -> bool:
        """Close the newest live connection with a close frame."""
        live = self.live_conns()
        if not live:
            return False
        with self._guard:
            live[-1].open = False
        await live[-1].ws.close(code=code)
        return True

    # ------------------------------------------------------------------ sending (loop)

    async def _send_one(self) -> bool:
        with self._guard:
            live = [c for c in self.conns if c.open]
            if not live or not self.outbox:
                return False
            conn, item = live[-1], self.outbox[0]
        frame_id = f"msg_{secrets.token_hex(8)}"
        parts = frames.event_frames(
            conn.service_id,
            payload=json.dumps(item.payload, ensure_ascii=False).encode(),
            frame_id=frame_id,
            trace_id=secrets.token_hex(8),
            parts=item.parts,
        )
        with self._guard:
            self.frame_events[frame_id] = item.event_id
        try:
            for part in parts:
                await conn.ws.send_bytes(part)
        except (ConnectionError, RuntimeError):
            with self._guard:
                conn.open = False
            return True
        delivery = Delivery(
            event_id=item.event_id,
            event_type=item.event_type,
            frame_id=frame_id,
            connection=conn.number,
            parts=item.parts,
            at=time.monotonic(),
        )
        with self._guard:
            self.outbox.popleft()
            self.deliveries.append(delivery)
            policy = self.redeliver
        if policy is not None:
            self._schedule(policy.after_s, delivery)
        return True

    # ------------------------------------------------------------------ redelivery (loop)

    def _schedule(self, after_s: float, delivery: Delivery) -> None:
        self._timers.later(after_s, lambda: self._check(delivery))

    def _check(self, delivery: Delivery) -> None:
        """Settle a delivery acked 200; send any other one again, while ``times`` allows."""
        with self._guard:
            policy = self.redeliver
            if policy is None:  # switched off since
                return
            codes = [a.code for a in self.acks if a.frame_id == delivery.frame_id]
            code = codes[0] if codes else None
            origin = self.origins.get(delivery.event_id, delivery.event_id)
            made = sum(
                1 for r in self.redeliveries if r.origin == origin and r.new_event_id is not None
            )
            new_event_id: str | None = None
            if code == 200:  # the SDK answers 200 for a handled event
                outcome = "acked"
            elif made >= policy.times:
                outcome = "exhausted"
            else:
                outcome, made = "redelivered", made + 1
                new_event_id = secrets.token_hex(16)
                payload = with_event_id(self.payloads[delivery.event_id], new_event_id)
                item = Outgoing(new_event_id, delivery.event_type, payload, delivery.parts)
                self.outbox.append(item)
                self.payloads[new_event_id] = payload
                self.origins[new_event_id] = origin
            self.redeliveries.append(
                Redelivery(
                    event_id=delivery.event_id,
                    frame_id=delivery.frame_id,
                    origin=origin,
                    ack_code=code,
                    outcome=outcome,
                    new_event_id=new_event_id,
                    attempt=made,
                    at=time.monotonic(),
                )
            )
        if new_event_id is not None:
            self._wake.set()
