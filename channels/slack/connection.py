"""Socket Mode: slack-bolt's ``AsyncSocketModeHandler``, watched for health, backoff and auth.

What the SDK already does, and this module relies on (slack_sdk 3.48, design §17.2):

- a ``disconnect`` envelope (``refresh_requested``, ``link_disabled``…) makes it open a new
  connection at once; a CLOSE frame does the same;
- it pings every ``ping_interval``; aiohttp's heartbeat closes a socket whose pong does not come
  back within half an interval, and the SDK's monitor marks a session stale after four
  intervals without a pong; either way the monitor reconnects (stale-socket detection);
- envelopes Slack did not see acknowledged are redelivered with ``retry_attempt`` + 1, which
  the listeners dedupe — so nothing is lost across a reconnect.

What it lacks, added here:

- **backoff**: the SDK retries a failed ``apps.connections.open`` every ``ping_interval``
  forever. ``LinkWebClient`` is the Web API client the SDK uses for it; it waits a capped,
  jittered exponential delay before each retry, and after a refused app token only retries
  every ``AUTH_RETRY_S`` (the channel is reported parked meanwhile);
- **health**: every frame counts as activity (pongs are seen through the SDK's
  ``last_ping_pong_time``); ``hello`` means connected, ``disconnect``/close/loss means
  reconnecting;
- **prompt reconnects** after a socket drops without a close frame, which the SDK would only
  notice on its next monitor tick: a one-second watchdog asks the SDK to reconnect. Its
  failures are logged per outage (``OutageLog``): the traceback once, then a line a retry
  naming the error and the backoff, and a line when ``hello`` comes again.

The handler is built inside the running loop (its client opens an aiohttp session and a task
in ``__init__``) and driven with ``connect_async``/``close_async``, never ``start_async``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import dataclass
from typing import Any

import aiohttp
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse
from typing_extensions import override

from bot.backoff import Backoff
from bot.errors import AuthFailed, ChannelError, SendError, SendErrorKind, TransientSendError
from bot.lifecycle import cancel_and_wait
from bot.ports import ChannelHealth
from channels.outage_log import OutageLog
from channels.slack.errors import error_code, translate

logger = logging.getLogger(__name__)

RECONNECT_BACKOFF = Backoff(base_s=1.0, cap_s=60.0)
AUTH_RETRY_S = 600.0
WATCH_INTERVAL_S = 1.0
CONNECT_TIMEOUT_S = 30.0


class LinkWebClient(AsyncWebClient):
    """The Web API client the Socket Mode client opens connections with.

    Every ``apps.connections.open`` — the first one and each reconnect the SDK makes — passes
    through here, so failures are classified, reported and paced.
    """

    def __init__(
        self, *, health: ChannelHealth, backoff: Backoff = RECONNECT_BACKOFF, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self._health = health
        self._backoff = backoff
        self._failures = 0
        self._refused = False
        self.retry_in_s = 0.0
        """The pause before the next ``apps.connections.open`` (0 after one that worked)."""
        self.closing = asyncio.Event()

    @override
    async def apps_connections_open(self, *, app_token: str, **kwargs: Any) -> AsyncSlackResponse:
        if self._failures:
            await self._pause()
        try:
            response = await super().apps_connections_open(app_token=app_token, **kwargs)
        except SlackApiError as exc:
            self._failed(translate(exc))
            raise
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            self._failed(TransientSendError(f"{type(exc).__name__}: {exc}"))
            raise
        self._failures = 0
        self._refused = False
        self.retry_in_s = 0.0
        return response

    def _failed(self, error: SendError) -> None:
        self._failures += 1
        if error.kind is SendErrorKind.AUTH_FAILED:
            self._refused = True
            self._health.auth_failed(f"apps.connections.open: {error}")
        elif error.kind is not SendErrorKind.RATE_LIMITED:
            self._health.disconnected(f"apps.connections.open: {error}")
        self.retry_in_s = AUTH_RETRY_S if self._refused else self._backoff.delay(self._failures)

    async def _pause(self) -> None:
        logger.debug("slack: reconnecting in %.1fs", self.retry_in_s)  # the watchdog logs it
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.retry_in_s):
                await self.closing.wait()
        if self.closing.is_set():
            raise ChannelError("the Slack channel is closing")


async def open_url(web: LinkWebClient, app_token: str) -> str:
    """A WebSocket URL, or ``AuthFailed``/``ChannelError`` explaining why there is none."""
    try:
        response = await web.apps_connections_open(app_token=app_token)
    except SlackApiError as exc:
        error = translate(exc)
        if error.kind is SendErrorKind.AUTH_FAILED:
            code = error_code(exc) or "refused"
            raise AuthFailed(f"Slack refused the app token ({code})") from None
        raise ChannelError(f"apps.connections.open failed: {error}") from exc
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        raise ChannelError(f"cannot reach Slack: {type(exc).__name__}: {exc}") from exc
    return str(response["url"])


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkOptions:
    app_token: str
    ping_interval_s: float
    proxy: str | None
    watch_interval_s: float = WATCH_INTERVAL_S


class SocketLink:
    """One Socket Mode connection (reconnected as needed) feeding ``app``."""

    def __init__(
        self, app: AsyncApp, options: LinkOptions, web: LinkWebClient, health: ChannelHealth
    ) -> None:
        self._app = app
        self._app_token = options.app_token
        self._web = web
        self._health = health
        self._ping_interval_s = options.ping_interval_s
        self._proxy = options.proxy
        self._watch_interval_s = options.watch_interval_s
        self._handler: AsyncSocketModeHandler | None = None
        self._watchdog: asyncio.Task[None] | None = None
        self._up = False
        self._outage = OutageLog(logger, "slack reconnect")

    async def open(self) -> None:
        """Connect; raises ``AuthFailed`` or ``ChannelError`` (after cleaning up) on failure."""
        url = await open_url(self._web, self._app_token)
        handler = AsyncSocketModeHandler(
            self._app,
            self._app_token,
            web_client=self._web,
            proxy=self._proxy,
            ping_interval=self._ping_interval_s,
        )
        self._handler = handler
        client = handler.client
        client.proxy = self._proxy  # the SDK fills None from HTTPS_PROXY, ignoring NO_PROXY
        client.wss_uri = url  # the URL just issued: its first connect needs no second call
        client.on_message_listeners.append(self._on_frame)
        client.on_close_listeners.append(self._on_close)
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT_S):
                await handler.connect_async()  # type: ignore[no-untyped-call]
        except TimeoutError:
            await self.close()
            raise ChannelError(f"no Socket Mode connection within {CONNECT_TIMEOUT_S:g}s") from None
        self._watchdog = asyncio.create_task(self._watch(), name="channel:slack:watchdog")

    async def close(self) -> None:
        self._web.closing.set()
        if self._watchdog is not None:
            await cancel_and_wait(self._watchdog)
            self._watchdog = None
        if self._handler is not None:
            handler, self._handler = self._handler, None
            await handler.close_async()  # type: ignore[no-untyped-call]

    async def _on_frame(self, frame: aiohttp.WSMessage) -> None:
        """Every text frame, before the SDK acts on it (it handles ``disconnect`` itself)."""
        self._health.activity()
        try:
            message = json.loads(frame.data)
        except (TypeError, ValueError):
            return
        kind = message.get("type") if isinstance(message, dict) else None
        if kind == "hello":
            self._report(up=True, reason="")
        elif kind == "disconnect":
            self._report(up=False, reason=f"disconnect: {message.get('reason') or 'unknown'}")

    async def _on_close(self, _message: aiohttp.WSMessage) -> None:
        self._report(up=False, reason="socket closed by Slack")

    def _report(self, *, up: bool, reason: str) -> None:
        if up:
            self._outage.ended()
            self._health.connected()
        elif self._up:
            self._health.disconnected(reason)
        self._up = up

    async def _watch(self) -> None:
        """Report pongs as activity and reconnect a socket that died without a close frame."""
        last_pong: float | None = None
        while True:
            await asyncio.sleep(self._watch_interval_s)
            handler = self._handler
            if handler is None:
                return
            client = handler.client
            if client.last_ping_pong_time is not None and client.last_ping_pong_time != last_pong:
                last_pong = client.last_ping_pong_time
                self._health.activity()
            session = client.current_session
            if session is not None and not session.closed:
                continue
            self._report(up=False, reason="socket lost")
            if not client.connect_operation_lock.locked():
                try:
                    await client.connect_to_new_endpoint()
                except Exception as exc:  # noqa: BLE001 - logged; the next tick retries
                    retry_in = self._web.retry_in_s or self._watch_interval_s
                    self._outage.failed(exc, retry_in=retry_in)
