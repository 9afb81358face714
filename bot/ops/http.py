"""The daemon's HTTP server: health, readiness, metrics, channel webhooks (design §13, §14),
the push API (design §19, ``push_api``) and the operator console (design §23, ``console``).

Channels in webhook mode register their routes here before the server starts, so every
webhook shares one listener on ``http.host:port``. ``GET /`` leads a browser to the console
when it is mounted, else answers a JSON index of the endpoints that are on (never the
webhooks' paths); ``/favicon.ico`` is a small SVG, so a browser's request for it is no 405.
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from bot.config.http import HttpSettings
from bot.errors import StoreError
from bot.fleet.replica import PRUNE_AFTER as LISTED_FOR
from bot.hub import ChannelState
from bot.messages import utc_now
from bot.metrics import Counters
from bot.ops.http_guard import AcceptErrors, ConnectionGuard
from bot.ops.readiness import Readiness
from bot.ops.routes import HttpMount, ListenError, RouteTable
from bot.records import Replica

if TYPE_CHECKING:
    from bot.push.api import PushApi

logger = logging.getLogger(__name__)

FAVICON: Final = (
    b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">'
    b'<rect width="32" height="32" rx="6" fill="#2f5d8a"/>'
    b'<path d="M8 10h16M8 16h16M8 22h10" stroke="#fff" stroke-width="3" stroke-linecap="round"/>'
    b'<circle cx="24" cy="22" r="3" fill="#f2b134"/></svg>'
)
FAVICON_CACHE: Final = "public, max-age=86400"


class HttpServer:
    def __init__(  # noqa: PLR0913 - what the server reports on, and the push API
        self,
        settings: HttpSettings,
        readiness: Readiness,
        counters: Counters,
        routes: RouteTable,
        replica: Replica | None = None,
        *,
        push: PushApi | None = None,
        mounts: Sequence[HttpMount] = (),
    ) -> None:
        """``replica``: this daemon among the store's replicas, named in ``/healthz``,
        ``/readyz`` and ``/metrics`` (``switchboard_replica_info``). ``push``: the push API
        (design §19), mounted when ``http.push_api.enabled``. ``mounts``: more routes,
        such as the operator console's (design §23)."""
        self._settings = settings
        self._identity: dict[str, str] = {}
        self._replica_id = replica.id if replica is not None else None
        if replica is not None:
            self._identity = {"replica": replica.id, "backend": replica.backend}
            counters.replicas.info.labels(replica=replica.id, backend=replica.backend).set(1)
        self._readiness = readiness
        self._hub = readiness.hub
        self._store = readiness.store
        self._counters = counters
        self._guard = ConnectionGuard(
            max_connections=settings.max_connections,
            header_timeout_s=settings.header_timeout_s,
            body_timeout_s=settings.body_timeout_s,
        )
        self._app = web.Application(middlewares=[self._guard.middleware])
        self._app.router.add_get("/healthz", self._healthz)
        self._app.router.add_get("/readyz", self._readyz)
        self._app.router.add_get("/metrics", self._metrics)
        self._routes = routes
        if push is not None and settings.push_api.enabled:
            push.mount(self._app)
        for extra in mounts:
            extra.mount(self._app)
        self._app.router.add_get("/", self._root)
        self._app.router.add_get("/favicon.ico", _favicon)
        self._webhooks = self._app.router.add_post("/{path:.*}", self._webhook).resource
        self._runner: web.AppRunner | None = None
        self._listener: asyncio.Server | None = None
        self._accept_errors: AcceptErrors | None = None
        self.port: int | None = None

    async def start(self) -> None:
        """Listen (the daemon builds a server only when ``http.enabled``)."""
        host, port = self._settings.host, self._settings.port
        # The keep-alive timer also bounds every later request head on a connection.
        runner = web.AppRunner(
            self._app, access_log=None, keepalive_timeout=self._settings.header_timeout_s
        )
        await runner.setup()
        self._runner = runner
        server = runner.server
        if server is None:  # pragma: no cover - setup() made it
            raise RuntimeError("aiohttp's runner has no server after setup()")
        loop = asyncio.get_running_loop()
        try:
            self._listener = await loop.create_server(
                self._guard.wrap(server), host, port, backlog=128, reuse_address=True
            )
        except OSError as exc:
            await self.aclose()
            raise ListenError(f"http: cannot listen on {host}:{port}: {_reason(exc)}") from None
        self._accept_errors = AcceptErrors(loop)
        self._accept_errors.install()
        sockets = self._listener.sockets
        self.port = int(sockets[0].getsockname()[1]) if sockets else port
        logger.info("http listening on %s:%s", host, self.port)

    async def aclose(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if listener is not None:
            await listener.wait_closed()
        if self._accept_errors is not None:
            self._accept_errors.uninstall()
            self._accept_errors = None

    async def _refresh_gauges(self) -> None:
        """Gauges that mirror state held elsewhere are read when scraped."""
        for state, count in (await self._store.outbox.counts()).items():
            self._counters.outbox_rows.labels(state=state).set(count)
        for name in self._hub.names():
            up = self._hub.state(name) is ChannelState.RUNNING
            self._counters.channel_up.labels(channel=name).set(1 if up else 0)
        self._counters.replicas.leases_held.set(await self._held())
        await self._heartbeat_ages()

    async def _heartbeat_ages(self) -> None:
        """Every replica the store still lists (a day after its last beat it is pruned), so a
        peer that died without deregistering shows as a growing age (design §11)."""
        now = utc_now()
        ages = self._counters.replicas.heartbeat_age
        replicas = await self._store.replicas.live(now, LISTED_FOR.total_seconds())
        ages.clear()
        for replica in replicas:
            ages.labels(replica=replica.id).set((now - replica.heartbeat_at).total_seconds())

    async def _held(self) -> int:
        """The chats this replica holds (0 alone on its store, where every chat is its own)."""
        if self._replica_id is None or not self._store.leases.shared:
            return 0
        return await self._store.leases.held(self._replica_id)

    async def _webhook(self, request: web.Request) -> web.StreamResponse:
        handler = self._routes.handler(request.path)
        if handler is None:
            raise web.HTTPNotFound
        return await handler(request)

    async def _root(self, _request: web.Request) -> web.Response:
        """To the console when it is mounted (its own guard asks for a login), else the index."""
        home = self._console()
        if home is not None:
            raise web.HTTPFound(home)
        return web.json_response({"service": "switchboard", "endpoints": self._endpoints()})

    def _console(self) -> str | None:
        """The mounted console's page (``/console/``): the server's sub-application."""
        for resource in self._app.router.resources():
            if isinstance(resource, web.PrefixedSubAppResource):
                return f"{resource.canonical}/"
        return None

    def _endpoints(self) -> list[dict[str, str]]:
        """Every route that is on, as ``{"method", "path"}``: not the webhooks' catch-all
        (their paths are the channels'), ``/`` or the icon."""
        found: list[dict[str, str]] = []
        for resource in self._app.router.resources():
            if resource is self._webhooks or resource.canonical in ("/", "/favicon.ico"):
                continue
            found += [
                {"method": route.method, "path": resource.canonical}
                for route in resource
                if route.method != "HEAD"
            ]
        return found

    async def _leases(self) -> dict[str, int]:
        """``leases_held`` on a shared store, where it says which share of the chats this is."""
        if not self._store.leases.shared:
            return {}
        try:
            return {"leases_held": await self._held()}
        except StoreError:
            return {}  # /readyz says the store is down; /healthz is about the process

    async def _healthz(self, _request: web.Request) -> web.Response:
        return web.json_response({"status": "ok", **self._identity, **await self._leases()})

    async def _readyz(self, _request: web.Request) -> web.Response:
        reasons = await self._readiness.reasons()
        body = {"ready": not reasons, "reasons": reasons, **self._identity, **await self._leases()}
        return web.Response(
            status=200 if not reasons else 503,
            text=json.dumps(body),
            content_type="application/json",
        )

    async def _metrics(self, _request: web.Request) -> web.Response:
        await self._refresh_gauges()
        payload = generate_latest(self._counters.registry)
        return web.Response(body=payload, headers={"Content-Type": CONTENT_TYPE_LATEST})


async def _favicon(_request: web.Request) -> web.Response:
    return web.Response(
        body=FAVICON, content_type="image/svg+xml", headers={"Cache-Control": FAVICON_CACHE}
    )


def _reason(exc: OSError) -> str:
    """``address already in use``, not the whole ``OSError`` with its errno tuple."""
    if exc.errno == errno.EADDRINUSE:
        return "address already in use"
    return (exc.strerror or str(exc)).lower()
