"""``/console/login`` (the token form), ``/console/login/once`` (a ``console-url`` link)
and ``/console/logout``.

Failed logins are counted per client address (``console.login_attempts_per_minute``; the
address behind a proxy in ``console.trusted_proxies``, see ``auth.client_address``); past the
limit a wrong token or link gets 429 with ``Retry-After`` until the window has passed, while
the right token or a valid link still gets in, so the operator cannot be locked out. A good
login sets the session cookie: ``HttpOnly``, ``SameSite=Strict``, ``Path=/console``, and
``Secure`` over TLS or behind a trusted proxy saying ``X-Forwarded-Proto: https``
(``console.secure_cookies``). Logging out revokes the session in the store for good.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import Callable
from typing import Final

from aiohttp import web
from markupsafe import Markup

from bot.console.auth import (
    COOKIE_NAME,
    COOKIE_PATH,
    LoginLimiter,
    Revocations,
    SessionSigner,
    client_address,
)
from bot.console.context import ConsoleDeps
from bot.console.login_links import take_link
from bot.console.pages import back, form, session
from bot.console.render import render, static_file

logger = logging.getLogger(__name__)

HOME: Final = "/console/"


def _next_path(text: str | None) -> str:
    """Where to go after the login: a console path only (never another site)."""
    if text and text.startswith("/console") and not text.startswith("//") and "\\" not in text:
        return text
    return HOME


class LoginRoutes:
    def __init__(
        self, deps: ConsoleDeps, signer: Callable[[], SessionSigner], revocations: Revocations
    ) -> None:
        self._deps = deps
        self._signer = signer
        self._revocations = revocations
        self._limiter = LoginLimiter()

    def add_to(self, router: web.UrlDispatcher) -> None:
        router.add_get("/login", self._form)
        router.add_post("/login", self._post)
        router.add_get("/login/once", self._once)
        router.add_post("/logout", self._logout)

    def _login_page(
        self, *, status: int = 200, error: str = "", target: str = HOME
    ) -> web.Response:
        css = Markup((static_file("console.css") or b"").decode())  # noqa: S704 - the package's own file
        context: dict[str, object] = {"error": error, "target": target, "css": css}
        return render("login.html", context, status=status)

    async def _form(self, request: web.Request) -> web.Response:
        return self._login_page(target=_next_path(request.query.get("next")))

    def _client(self, request: web.Request) -> str:
        trusted = self._deps.settings().console.trusted_proxies
        return client_address(request.remote, request.headers.get("X-Forwarded-For"), trusted)

    def _failed(self, request: web.Request, error: str, target: str = HOME) -> web.Response:
        """A wrong token or link: 401, or 429 once this client is past the limit."""
        client = self._client(request)
        per_minute = self._deps.settings().console.login_attempts_per_minute
        wait = self._limiter.blocked(client, per_minute)
        if wait is not None:
            response = self._login_page(status=429, error="Too many failed logins; wait a minute.")
            response.headers["Retry-After"] = str(int(wait + 0.999))
            return response
        self._limiter.failed(client)
        logger.warning("console: failed login from %s", client)
        return self._login_page(status=401, error=error, target=target)

    async def _post(self, request: web.Request) -> web.Response:
        fields = await form(request)
        expected = self._deps.settings().console.token_text
        offered = fields.get("token", "").strip()
        target = _next_path(fields.get("next"))
        if not expected or not hmac.compare_digest(offered.encode(), expected.encode()):
            return self._failed(request, "That is not the console token.", target)
        return self._enter(request, fields.get("name", ""), target)

    async def _once(self, request: web.Request) -> web.Response:
        state_dir = self._deps.settings().state_dir
        name = await asyncio.to_thread(take_link, state_dir, request.query.get("t", ""))
        if name is None:
            return self._failed(
                request, "That login link was used already, has expired or is unknown."
            )
        return self._enter(request, name, HOME)

    def _enter(self, request: web.Request, name: str, target: str) -> web.Response:
        console = self._deps.settings().console
        session, cookie = self._signer().issue(name, console.session_ttl_s)
        logger.info("console: %s logged in from %s", session.actor, self._client(request))
        response = web.HTTPSeeOther(target)
        response.set_cookie(
            COOKIE_NAME,
            cookie,
            path=COOKIE_PATH,
            max_age=console.session_ttl_s,
            httponly=True,
            samesite="Strict",
            secure=self._secure(request),
        )
        raise response

    def _secure(self, request: web.Request) -> bool:
        console = self._deps.settings().console
        if console.secure_cookies != "auto":
            return console.secure_cookies == "always"
        if request.secure:
            return True
        forwarded = request.headers.get("X-Forwarded-Proto", "").split(",")[0].strip().lower()
        return console.trust_forwarded_proto and forwarded == "https"

    async def _logout(self, request: web.Request) -> web.Response:
        await self._revocations.revoke(session(request))
        response = back("/console/login", note="logged out")
        response.del_cookie(COOKIE_NAME, path=COOKIE_PATH)
        raise response
