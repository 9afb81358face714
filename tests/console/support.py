"""Shared by the console tests: its settings, the daemon with the console mounted, logging in
over plain HTTP, and finding a Chromium for the browser tests."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer

from bot.app import Daemon, DaemonOptions, Overrides
from bot.commands import default_registry
from bot.config.settings import Settings
from bot.console.app import Console
from bot.console.context import ConsoleDeps
from bot.console.wiring import daemon_console
from bot.hub import ChannelHub
from bot.ops.routes import RouteTable
from bot.ports import AgentBackend, ChannelContext, Store
from bot.registry import store_for
from channels.telegram import TelegramChannel
from tests.bot.harness import started
from tests.channels.health_log import HealthLog
from tests.channels.telegram_support import FAST_CAPS, TelegramRun
from tests.fakes.telegram_api import FakeTelegram

TOKEN: Final = "console-test-token"  # noqa: S105 - a test token
SCREENSHOTS: Final = os.environ.get("SWITCHBOARD_SCREENSHOTS") == "1"
"""Set to 1, the browser tests write the README's screenshots to ``docs/img``."""
IMAGES: Final = Path(__file__).resolve().parents[2] / "docs" / "img"
CHROMIUM_CANDIDATES: Final = ("chromium", "chromium-browser", "google-chrome", "chrome")


def console_section(**extra: object) -> dict[str, object]:
    return {"enabled": True, "token": TOKEN, **extra}


def chromium_path() -> str | None:
    """``SWITCHBOARD_CHROMIUM``, else a Chromium on ``PATH`` (Debian's ``chromium``); ``None``
    leaves it to Playwright's own download, if it was installed."""
    named = os.environ.get("SWITCHBOARD_CHROMIUM")
    if named:
        return named
    for name in CHROMIUM_CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


def cookie_session() -> aiohttp.ClientSession:
    """A client keeping cookies for 127.0.0.1 (aiohttp's jar refuses IP hosts by default)."""
    return aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))


async def log_in(session: aiohttp.ClientSession, base: str, name: str = "tester") -> str:
    """Log in with the token; the session's CSRF token (read from a page's meta tag)."""
    async with session.post(
        f"{base}/console/login", data={"token": TOKEN, "name": name}, allow_redirects=False
    ) as response:
        assert response.status == 303, await response.text()
    async with session.get(f"{base}/console/audit") as response:
        assert response.status == 200
        page = await response.text()
    marker = '<meta name="csrf-token" content="'
    start = page.index(marker) + len(marker)
    return page[start : page.index('"', start)]


@asynccontextmanager
async def console_daemon(
    settings: Settings, fake: FakeTelegram, agent: AgentBackend
) -> AsyncIterator[TelegramRun]:
    """The daemon as ``switchboard run`` builds it with the console mounted, its Telegram
    adapter (fast pacing) talking to ``fake``."""
    health = HealthLog()
    context = ChannelContext(
        routes=RouteTable(), state_dir=settings.state_dir, health=health,
        commands=default_registry().menu(),
    )  # fmt: skip
    channel = TelegramChannel(settings, context, capabilities=FAST_CAPS, poll_timeout_s=1)
    options = DaemonOptions(
        overrides=Overrides(channels=[channel], agent=agent), mounts=(daemon_console,)
    )
    async with started(Daemon(settings, options)) as handle:
        await health.wait_for("connected")
        yield TelegramRun(handle.kernel, channel, health, handle.daemon)


@dataclass
class Served:
    base: str
    store: Store
    app: web.Application
    hub: ChannelHub


class serve_console:
    """The console alone on a real aiohttp server over a real store (no daemon, no kernel);
    ``shown`` makes what the console is handed of it (default: the store itself)."""

    def __init__(self, settings: Settings, shown: Callable[[Store], Store] | None = None) -> None:
        self._settings = settings
        self._store = store_for(settings)
        self._shown = shown
        self._server: TestServer | None = None

    async def __aenter__(self) -> Served:
        await self._store.open()
        app = web.Application()
        hub = ChannelHub(self._store.settings)
        store = self._store if self._shown is None else self._shown(self._store)
        deps = ConsoleDeps(settings=lambda: self._settings, store=store, hub=hub)
        Console(deps).mount(app)
        self._server = TestServer(app, host="127.0.0.1")
        await self._server.start_server()
        return Served(f"http://127.0.0.1:{self._server.port}", self._store, app, hub)

    async def __aexit__(self, *_exc: object) -> None:
        if self._server is not None:
            await self._server.close()
        await self._store.aclose()
