"""The stream-mode connection, owned by the daemon (design §17.4).

``dingtalk_stream.DingTalkStreamClient.start`` cannot run in a daemon: it opens the connection
with blocking ``requests`` and no timeout, swallows ``CancelledError`` (a single cancel does not
stop it), retries refused credentials every 10 s forever and reads its endpoint from an
environment variable at import. So this module owns the loop and keeps the SDK for what it is
good at, the frames: ``CallbackMessage``/``SystemMessage``/``EventMessage`` parse them and the
handlers' ``raw_process`` build the acks in the SDK's format.

- ``POST {api_base_url}/v1.0/gateway/connections/open`` (bounded, on the loop) subscribes to
  the callback topics handled here only; HTTP 401/403 or a credentials code → ``AuthFailed``;
- the websocket at ``endpoint?ticket=…``, with protocol pings every ``HEARTBEAT_S``;
- ``SYSTEM`` ``ping`` is acked with its data echoed; ``disconnect`` is acked, then the socket is
  closed and a new connection opened at once; a dropped socket reconnects with backoff;
  each is reported to health; failed reconnects are logged per outage (``OutageLog``: one
  traceback, then a line a retry, and one when it connects again);
- every ``CALLBACK`` runs in its own task (so pings are answered while a message is
  journaled) and is acked only when its handler returns, i.e. once the message is recorded; a
  handler that refuses raises, which leaves the callback unacked so DingTalk redelivers it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from urllib.parse import quote_plus, urlsplit

import aiohttp
from dingtalk_stream import AckMessage, CallbackHandler, CallbackMessage, EventMessage
from dingtalk_stream.frames import SystemMessage
from dingtalk_stream.handlers import EventHandler, SystemHandler
from dingtalk_stream.version import VERSION_STRING

from bot.backoff import Backoff
from bot.errors import AuthFailed, ChannelError, SendError
from bot.ports import ChannelHealth
from channels.dingtalk.api import request
from channels.dingtalk.errors import CREDENTIAL_CODES, code_of
from channels.outage_log import OutageLog

logger = logging.getLogger(__name__)

OPEN_PATH = "/v1.0/gateway/connections/open"
OPEN_TIMEOUT = aiohttp.ClientTimeout(total=15.0, connect=10.0)
HEARTBEAT_S = 20.0
RECONNECT = Backoff(base_s=1.0, cap_s=60.0)
USER_AGENT = f"switchboard dingtalk-sdk-python/v{VERSION_STRING}"


class NotAccepted(Exception):
    """Raised by a callback handler so its frame is not acked (DingTalk redelivers it)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamConfig:
    base: str
    client_id: str
    client_secret: str


class AckEverything(EventHandler):
    """Events are not subscribed to; one that arrives anyway is acked, never redelivered."""

    async def process(self, event: EventMessage) -> tuple[int, str]:
        logger.debug("dingtalk event %s ignored", event.headers.topic)
        return AckMessage.STATUS_OK, "OK"


class StreamLink:
    def __init__(
        self,
        session: aiohttp.ClientSession,
        config: StreamConfig,
        handlers: dict[str, CallbackHandler],
        health: ChannelHealth,
        *,
        reconnect: Backoff = RECONNECT,
    ) -> None:
        self._session = session
        self._config = config
        self._handlers = handlers
        self._health = health
        self._reconnect = reconnect
        self._system = SystemHandler()
        self._events = AckEverything()
        self._ws: aiohttp.ClientWebSocketResponse | None = None
        self._send_lock = asyncio.Lock()
        self._serving: asyncio.Task[None] | None = None
        self._frames: set[asyncio.Task[None]] = set()
        self._outage = OutageLog(logger, "dingtalk reconnect")

    # ------------------------------------------------------------------ lifecycle

    async def open(self) -> None:
        """Connect once (raising ``AuthFailed``/``ChannelError``), then keep connected."""
        try:
            self._ws = await self._connect()
        except AuthFailed:
            raise
        except SendError as exc:
            raise ChannelError(f"dingtalk stream connection failed: {exc}") from exc
        self._health.connected()
        self._serving = asyncio.create_task(self._serve(), name="channel:dingtalk:stream")

    async def close(self) -> None:
        serving, self._serving = self._serving, None
        tasks = [*self._frames, *([serving] if serving is not None else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        ws, self._ws = self._ws, None
        if ws is not None:
            await ws.close()

    # ------------------------------------------------------------------ connecting

    async def _ticket(self) -> str:
        body = {
            "clientId": self._config.client_id,
            "clientSecret": self._config.client_secret,
            "subscriptions": [{"type": "CALLBACK", "topic": t} for t in self._handlers],
            "ua": USER_AGENT,
            "localIp": "",
        }
        url = f"{self._config.base}{OPEN_PATH}"
        async with asyncio.timeout(OPEN_TIMEOUT.total):
            status, answer, _headers = await request(self._session, "POST", url, body=body)
        if status in (401, 403) or code_of(answer) in CREDENTIAL_CODES:
            raise AuthFailed(f"dingtalk refused the app credentials ({code_of(answer) or status})")
        endpoint, ticket = str(answer.get("endpoint") or ""), str(answer.get("ticket") or "")
        if status >= 400 or not endpoint or not ticket:
            raise ChannelError(f"connections/open answered HTTP {status} {code_of(answer)}")
        if urlsplit(endpoint).query:
            raise ChannelError("connections/open answered an endpoint that has a query")
        return f"{endpoint}?ticket={quote_plus(ticket)}"

    async def _connect(self) -> aiohttp.ClientWebSocketResponse:
        url = await self._ticket()
        try:
            async with asyncio.timeout(OPEN_TIMEOUT.total):
                return await self._session.ws_connect(url, heartbeat=HEARTBEAT_S, autoping=True)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise ChannelError(f"stream websocket failed: {type(exc).__name__}: {exc}") from exc

    async def _serve(self) -> None:
        """Read frames; reconnect after a drop or a ``disconnect``, until cancelled."""
        attempt = 0
        while True:
            ws = self._ws
            if ws is not None:
                reason = await self._read(ws)
                self._ws = None
                await ws.close()
                self._health.disconnected(reason)
                logger.info("dingtalk stream closed (%s); reconnecting", reason)
                if reason == "disconnect requested":
                    attempt = 0
                else:
                    attempt += 1
                    await asyncio.sleep(self._reconnect.delay(attempt))
            try:
                self._ws = await self._connect()
            except AuthFailed as exc:
                self._health.auth_failed(str(exc))
                return
            except ChannelError as exc:
                attempt += 1
                delay = self._reconnect.delay(attempt)
                self._outage.failed(exc, retry_in=delay)
                await asyncio.sleep(delay)
                continue
            attempt = 0
            self._outage.ended()
            self._health.connected()

    async def _read(self, ws: aiohttp.ClientWebSocketResponse) -> str:
        async for frame in ws:
            if frame.type is not aiohttp.WSMsgType.TEXT:
                continue
            self._health.activity()
            try:
                payload = json.loads(frame.data)
            except ValueError:
                logger.warning("dingtalk sent a frame that is not JSON; ignored")
                continue
            if isinstance(payload, dict) and await self._dispatch(ws, payload):
                return "disconnect requested"
        return f"socket closed ({ws.close_code})"

    # ------------------------------------------------------------------ frames

    async def _dispatch(
        self, ws: aiohttp.ClientWebSocketResponse, payload: dict[str, object]
    ) -> bool:
        """Handle one frame; ``True`` when DingTalk asked us to reconnect."""
        kind = payload.get("type")
        if kind == SystemMessage.TYPE:
            system = SystemMessage.from_dict(payload)
            await self._ack(ws, await self._system.raw_process(system))
            return bool(system.headers.topic == SystemMessage.TOPIC_DISCONNECT)
        if kind == EventMessage.TYPE:
            await self._ack(ws, await self._events.raw_process(EventMessage.from_dict(payload)))
            return False
        if kind == CallbackMessage.TYPE:
            callback = CallbackMessage.from_dict(payload)
            task = asyncio.create_task(
                self._callback(ws, callback), name="channel:dingtalk:callback"
            )
            self._frames.add(task)
            task.add_done_callback(self._frames.discard)
            return False
        logger.warning("dingtalk sent a frame of unknown type %r; ignored", kind)
        return False

    async def _callback(
        self, ws: aiohttp.ClientWebSocketResponse, callback: CallbackMessage
    ) -> None:
        handler = self._handlers.get(str(callback.headers.topic))
        if handler is None:
            logger.warning("dingtalk callback on unsubscribed topic %s", callback.headers.topic)
            return
        try:
            ack = await handler.raw_process(callback)
        except NotAccepted as exc:
            logger.info("dingtalk callback %s left unacked: %s", callback.headers.message_id, exc)
            return
        except Exception:  # a bug must not end the connection; DingTalk redelivers the frame
            logger.exception(
                "dingtalk callback %s failed; left unacked", callback.headers.message_id
            )
            return
        await self._ack(ws, ack)

    async def _ack(self, ws: aiohttp.ClientWebSocketResponse, ack: AckMessage) -> None:
        if ws.closed:
            return  # DingTalk redelivers what was not acked
        async with self._send_lock:
            try:
                await ws.send_str(json.dumps(ack.to_dict()))
            except (aiohttp.ClientError, ConnectionError) as exc:
                logger.info("dingtalk ack not sent (%s); the frame will be redelivered", exc)
