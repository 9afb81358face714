"""Mounting the console on the daemon's server, and the guard in front of every route.

Without a valid session only the login page (and the login forms it posts) is served: a page
redirects to the login, anything else (``/console/api/``, ``/console/partials/``, an htmx
request, a POST) gets 401. A POST with a session still needs the session's CSRF token (form
field ``csrf`` or header ``X-CSRF-Token``), else 403.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Final
from urllib.parse import quote

from aiohttp import web

from bot.console import (
    pages_access,
    pages_approvals,
    pages_conversations,
    pages_misc,
    pages_outbox,
    pages_overview,
    pages_trace,
    pages_usage,
)
from bot.console.auth import COOKIE_NAME, Revocations, Session, SessionSigner
from bot.console.context import ConsoleDeps
from bot.console.login_routes import LoginRoutes
from bot.console.pages import CURRENT, DEPS, refusal
from bot.console.render import static_file, static_response

logger = logging.getLogger(__name__)

PREFIX: Final = "/console"
PUBLIC: Final = frozenset({f"{PREFIX}/login", f"{PREFIX}/login/once"})
MACHINE_PREFIXES: Final = (f"{PREFIX}/api/", f"{PREFIX}/partials/")
STATIC_FILES: Final = (
    "htmx.min.js",
    "uPlot.iife.min.js",
    "uPlot.min.css",
    "console.css",
    "console.js",
    "usage.js",
)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Console:
    """The console's sub-application; ``mount`` puts it under ``/console``."""

    def __init__(self, deps: ConsoleDeps) -> None:
        self._deps = deps
        self._signers: dict[str, SessionSigner] = {}
        self._revocations = Revocations(deps.store)
        self._login = LoginRoutes(deps, self.signer, self._revocations)

    def signer(self) -> SessionSigner:
        """The signer of the configured token (a reload with a new token logs all out)."""
        token = self._deps.settings().console.token_text
        signer = self._signers.get(token)
        if signer is None:
            self._signers = {token: (signer := SessionSigner(token))}
        return signer

    def mount(self, app: web.Application) -> None:
        """Add the routes (before any catch-all route of the server)."""
        for name in STATIC_FILES:
            static_file(name)  # read the package's files now, not on the loop later
        sub = web.Application(middlewares=[self._guard])
        sub[DEPS] = self._deps
        self._login.add_to(sub.router)
        sub.router.add_get("/static/{name}", _static)
        for module in (
            pages_overview,
            pages_conversations,
            pages_trace,
            pages_outbox,
            pages_access,
            pages_approvals,
            pages_misc,
            pages_usage,
        ):
            module.add_routes(sub.router)
        app.router.add_get(PREFIX, _to_overview)
        app.add_subapp(f"{PREFIX}/", sub)

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        signer = self.signer()
        if request.path in PUBLIC:
            return await handler(request)
        session = signer.verify(request.cookies.get(COOKIE_NAME))
        if session is None or await self._revocations.revoked(session):  # logged out for good
            return _unauthenticated(request)
        if request.method not in ("GET", "HEAD") and not await _csrf_ok(request, signer, session):
            logger.warning(
                "console: %s %s refused: missing or forged CSRF token", request.method, request.path
            )
            return refusal(403, "This action needs the page's CSRF token; reload the page.")
        request[CURRENT] = (session, signer)
        return await handler(request)


async def _csrf_ok(request: web.Request, signer: SessionSigner, session: Session) -> bool:
    offered = request.headers.get("X-CSRF-Token")
    if offered is None and request.content_type in (
        "application/x-www-form-urlencoded",
        "multipart/form-data",
    ):
        field = (await request.post()).get("csrf")
        offered = field if isinstance(field, str) else None
    return signer.csrf_valid(session, offered)


def _unauthenticated(request: web.Request) -> web.StreamResponse:
    machine = request.path.startswith(MACHINE_PREFIXES) or "HX-Request" in request.headers
    if machine or request.method not in ("GET", "HEAD"):
        return web.json_response({"error": "log in first"}, status=401)
    target = request.path_qs
    raise web.HTTPFound(f"{PREFIX}/login?next={quote(target, safe='')}")


async def _static(request: web.Request) -> web.Response:
    return static_response(request.match_info["name"])


async def _to_overview(_request: web.Request) -> web.Response:
    raise web.HTTPFound(f"{PREFIX}/")
