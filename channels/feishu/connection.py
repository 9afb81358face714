"""The long connection: lark-oapi's ``ws.Client`` on one adapter-private thread (design §17.3).

The SDK's client blocks its thread forever and schedules everything on the module global
``lark_oapi.ws.client.loop``, so it gets a thread of its own, with a loop of its own set as
that global while it runs (the one monkeypatch; the previous value is put back when the
thread ends). A process-wide lock lets only one such thread exist at a time, since the
global is shared: a restarted channel waits for its predecessor to finish.

``SdkClient`` subclasses ``ws.Client`` to add what it lacks, all on the SDK's thread:

- **discovery with a timeout**: the SDK's ``requests.post`` has none. The first connect uses
  the endpoint the adapter already discovered asynchronously (so refused credentials were
  reported by ``start``); reconnects discover again here, bounded;
- **health**: every frame (events and pongs) is activity; connects and losses are reported;
  a reconnect loop that gave up asks the supervisor for a fresh channel (``failed``), and
  credentials refused while reconnecting park it (``auth_failed``);
- a ping loop that logs a failing ping with its message, the traceback once per outage
  (``OutageLog``), and that pings work again (the SDK logs through its deprecated ``warn``).

Stopping (the SDK has no ``stop``): on the SDK's loop, reconnects are switched off and every
task is cancelled — which ends ``start()`` with ``CancelledError`` — then the thread itself
cancels what is left, closes the socket, closes its loop and exits. ``close`` waits for
that, bounded by ``STOP_TIMEOUT_S``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import lark_oapi.ws.client as ws_client  # type: ignore[import-untyped]
from lark_oapi.core.enum import LogLevel  # type: ignore[import-untyped]
from lark_oapi.event.dispatcher_handler import (  # type: ignore[import-untyped]
    EventDispatcherHandler,
)
from lark_oapi.ws.exception import (  # type: ignore[import-untyped]
    ClientException,
    ServerException,
)
from lark_oapi.ws.model import ClientConfig  # type: ignore[import-untyped]
from typing_extensions import override

from bot.errors import ChannelError
from channels.feishu.discovery import Endpoint, EndpointError, discover_sync
from channels.feishu.errors import CREDENTIAL_CODES
from channels.outage_log import OutageLog, short_error
from channels.thread_bridge import ThreadBridge

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0
CANCEL_AGAIN_S = 0.5
DRAIN_TIMEOUT_S = 3.0
_ONE_CLIENT = threading.Lock()
"""``lark_oapi.ws.client.loop`` is one global: one long-connection thread at a time."""

EventHandler = Callable[[bytes], object]
"""Called on the SDK thread with each event's JSON; its return value is the ack's data,
and raising makes the SDK answer 500 so Feishu delivers the event again."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkConfig:
    app_id: str
    app_secret: str
    domain: str
    debug: bool = False


class Dispatcher(EventDispatcherHandler):  # type: ignore[misc]
    """Every event goes to one handler: no per-type registration, so no type goes unacked."""

    def __init__(self, handle: EventHandler) -> None:
        super().__init__()
        self._handle = handle

    @override
    def _do_without_validation(self, payload: bytes) -> object:
        return self._handle(payload)


class SdkClient(ws_client.Client):  # type: ignore[misc]
    def __init__(self, link: LongConnection, config: LinkConfig, first: Endpoint) -> None:
        level = LogLevel.DEBUG if config.debug else LogLevel.WARNING
        super().__init__(
            config.app_id,
            config.app_secret,
            log_level=level,
            event_handler=Dispatcher(link.handler),
            domain=config.domain,
            auto_reconnect=True,
        )
        self._link = link
        self._config = config
        self._first: Endpoint | None = first
        self.pings = OutageLog(logger, "feishu ping")

    @override
    def _get_conn_url(self) -> str:
        endpoint, self._first = self._first, None
        if endpoint is None:
            try:
                endpoint = discover_sync(
                    self._config.domain, self._config.app_id, self._config.app_secret
                )
            except EndpointError as exc:
                if exc.retryable:
                    raise ServerException(exc.code, exc.msg) from None
                raise ClientException(exc.code, exc.msg) from None
        if endpoint.client_config is not None:
            self._configure(ClientConfig(endpoint.client_config))
        return endpoint.url

    @override
    async def _connect(self) -> None:
        await super()._connect()
        if self._conn is not None:
            self._link.on_connected()

    @override
    async def _disconnect(self) -> None:
        was_up = self._conn is not None
        await super()._disconnect()
        if was_up:
            self._link.on_lost("connection lost")

    @override
    async def _reconnect(self) -> None:
        try:
            await super()._reconnect()
        except Exception as exc:  # noqa: BLE001 - reported; the supervisor restarts us
            self._link.on_gave_up(exc)

    @override
    async def _handle_message(self, msg: bytes) -> None:
        self._link.bridge.activity()
        await super()._handle_message(msg)

    @override
    async def _ping_loop(self) -> None:
        while True:
            try:
                if self._conn is not None:
                    frame = ws_client._new_ping_frame(int(self._service_id))
                    await self._write_message(frame.SerializeToString())
                    self.pings.ended()
            except Exception as exc:  # noqa: BLE001 - the next ping tries again
                self.pings.failed(exc, retry_in=self._ping_interval)
            await asyncio.sleep(self._ping_interval)


class LongConnection:
    """One ``ws.Client`` on its thread; ``open`` returns once it is connected."""

    def __init__(self, config: LinkConfig, bridge: ThreadBridge, handler: EventHandler) -> None:
        self._config = config
        self.bridge = bridge
        self.handler = handler
        self._handoff = threading.Lock()
        self._closing = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: SdkClient | None = None
        self._thread: threading.Thread | None = None
        self._first: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._done: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._up = False

    async def open(self, endpoint: Endpoint) -> None:
        """Start the thread and wait for the first connection; ``ChannelError`` otherwise."""
        thread = threading.Thread(target=self._run, args=(endpoint,), name="feishu-ws", daemon=True)
        self._thread = thread
        thread.start()
        first = asyncio.wrap_future(self._first)
        done, _ = await asyncio.wait({first}, timeout=CONNECT_TIMEOUT_S)
        if not done:
            first.cancel()
            raise ChannelError(f"no Feishu long connection within {CONNECT_TIMEOUT_S:g}s")
        error = first.exception()
        if error is not None:
            raise ChannelError(f"Feishu long connection failed: {error}") from error

    async def close(self) -> None:
        """Stop the thread. The cancellation is sent again every ``CANCEL_AGAIN_S`` until the
        thread ends: one that lands between two of the SDK's ``run_until_complete`` calls (a
        close right after connecting) finds only the first call's tasks, and ``start`` goes
        on to create its ping loop and wait forever."""
        with self._handoff:
            self._closing = True
            loop, client = self._loop, self._client
        thread = self._thread
        if thread is None:
            return
        finished = asyncio.wrap_future(self._done)
        deadline = asyncio.get_running_loop().time() + STOP_TIMEOUT_S
        while not finished.done():
            if loop is not None and client is not None:
                with contextlib.suppress(RuntimeError):  # the thread's loop already closed
                    loop.call_soon_threadsafe(_cancel_everything, client)
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                logger.error(
                    "feishu long-connection thread did not stop within %.0fs", STOP_TIMEOUT_S
                )
                return
            await asyncio.wait({finished}, timeout=min(CANCEL_AGAIN_S, left))
        await asyncio.to_thread(thread.join, 1.0)

    # ------------------------------------------------------------------ on the SDK thread

    def on_connected(self) -> None:
        self._up = True
        self._settle_first(None)
        logger.info("feishu long connection up")
        self.bridge.connected()

    def on_lost(self, reason: str) -> None:
        if self._closing or not self._up:
            return
        self._up = False
        logger.info("feishu long connection lost; the SDK reconnects")
        self.bridge.disconnected(reason)

    def on_gave_up(self, exc: Exception) -> None:
        if self._settle_first(exc):
            return
        if self._closing:
            return
        reason = f"reconnecting failed: {short_error(exc)}"
        logger.warning("feishu %s", reason)  # once: the supervisor restarts the channel
        if isinstance(exc, ClientException) and exc.code in CREDENTIAL_CODES:
            self.bridge.auth_failed(reason)
        else:
            self.bridge.failed(reason)

    def _settle_first(self, outcome: Exception | None) -> bool:
        """Tell ``open`` how the first connect went; ``False`` if it was already told."""
        try:
            if outcome is None:
                self._first.set_result(None)
            else:
                self._first.set_exception(outcome)
        except concurrent.futures.InvalidStateError:
            return False
        return True

    def _run(self, endpoint: Endpoint) -> None:
        if not _ONE_CLIENT.acquire(timeout=STOP_TIMEOUT_S):
            self._settle_first(ChannelError("an earlier long connection is still shutting down"))
            self._done.set_result(None)
            return
        previous = ws_client.loop
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        ws_client.loop = loop
        client: SdkClient | None = None
        try:
            client = SdkClient(self, self._config, endpoint)
            with self._handoff:
                if self._closing:
                    return
                self._loop, self._client = loop, client
            client.start()
        except asyncio.CancelledError:
            pass  # our stop
        except Exception as exc:  # noqa: BLE001 - the thread's boundary; reported below
            self._thread_failed(exc)
        finally:
            self._finish(loop, client, previous)

    def _thread_failed(self, exc: Exception) -> None:
        if self._settle_first(exc):
            return
        if not self._closing:
            logger.error("feishu long-connection client stopped", exc_info=exc)
            self.bridge.failed(f"{type(exc).__name__}: {exc}")

    def _finish(
        self, loop: asyncio.AbstractEventLoop, client: SdkClient | None, previous: Any
    ) -> None:
        try:
            if client is not None:
                loop.run_until_complete(_drain(client))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()
            asyncio.set_event_loop(None)
            ws_client.loop = previous
            _ONE_CLIENT.release()
            self._settle_first(ChannelError("the long connection was closed"))
            self._done.set_result(None)


def _cancel_everything(client: SdkClient) -> None:
    """On the SDK's loop: no more reconnects, and every task (``start``'s own too) cancelled."""
    client._auto_reconnect = False  # the SDK has no public stop
    for task in asyncio.all_tasks():
        task.cancel()


async def _drain(client: SdkClient) -> None:
    """On the SDK's loop, after ``start`` ended: cancel leftovers and close the socket."""
    client._auto_reconnect = False
    me = asyncio.current_task()
    for _ in range(3):
        tasks = [t for t in asyncio.all_tasks() if t is not me and not t.done()]
        if not tasks:
            break
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks, timeout=DRAIN_TIMEOUT_S)
    conn, client._conn = client._conn, None
    if conn is not None:
        try:
            async with asyncio.timeout(DRAIN_TIMEOUT_S):
                await conn.close()
        except (TimeoutError, OSError) as exc:
            logger.debug("feishu socket close: %s", type(exc).__name__)
            conn.transport.abort()
