"""``GET /`` and ``/favicon.ico`` on the daemon's HTTP server: the root leads to the console
when it is mounted, else it answers an index of the endpoints that are on; the icon is a
small cacheable SVG."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp

from bot.app import Daemon, DaemonOptions, Overrides
from bot.config.settings import Settings
from bot.console.wiring import daemon_console
from tests.bot.harness import Running, make_settings, started
from tests.bot.ops.push_support import push_settings
from tests.console.support import console_section
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import FakeChannel


@asynccontextmanager
async def _daemon(settings: Settings, *, console: bool) -> AsyncIterator[str]:
    """The daemon as ``switchboard run`` builds it (with the console mount when asked); its
    base URL."""
    options = DaemonOptions(
        overrides=Overrides(channels=[FakeChannel()], agent=FakeAgent()),
        mounts=(daemon_console,) if console else (),
    )
    async with started(Daemon(settings, options)) as handle:
        yield _base(handle)


def _base(handle: Running) -> str:
    assert handle.daemon.http is not None
    return f"http://127.0.0.1:{handle.daemon.http.port}"


async def test_the_root_leads_to_the_console_when_it_is_on(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, console=console_section())
    async with (
        _daemon(settings, console=True) as base,
        aiohttp.ClientSession() as client,
        client.get(f"{base}/", allow_redirects=False) as response,
    ):
        assert response.status in (302, 303)
        assert response.headers["Location"] == "/console/"


async def test_the_root_lists_the_endpoints_that_are_on_without_a_console(
    tmp_path: Path,
) -> None:
    async with (
        _daemon(make_settings(tmp_path), console=False) as base,
        aiohttp.ClientSession() as client,
        client.get(f"{base}/", allow_redirects=False) as response,
    ):
        assert response.status == 200
        assert response.content_type == "application/json"
        index = await response.json()
    paths = [endpoint["path"] for endpoint in index["endpoints"]]
    assert paths == ["/healthz", "/readyz", "/metrics"]  # no push API, no console: both off


async def test_the_index_names_the_push_api_when_it_is_on(tmp_path: Path) -> None:
    async with (
        _daemon(push_settings(tmp_path), console=False) as base,
        aiohttp.ClientSession() as client,
        client.get(f"{base}/") as response,
    ):
        index = await response.json()
    routes = [(endpoint["method"], endpoint["path"]) for endpoint in index["endpoints"]]
    assert ("POST", "/api/v1/messages") in routes
    assert ("GET", "/api/v1/deliveries/{delivery_id}") in routes


async def test_the_favicon_is_a_small_cacheable_svg(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, console=console_section())
    async with _daemon(settings, console=True) as base, aiohttp.ClientSession() as client:
        async with client.get(f"{base}/favicon.ico") as response:
            assert response.status == 200
            assert response.content_type == "image/svg+xml"
            assert "max-age=" in response.headers["Cache-Control"]
            body = await response.read()
        async with client.head(f"{base}/favicon.ico") as head:
            assert head.status == 200
    assert body.startswith(b"<svg")
    assert len(body) < 2048


async def test_other_paths_still_answer_as_before(tmp_path: Path) -> None:
    """A POST to ``/`` is still the webhook catch-all's (404: no channel registered it)."""
    async with (
        _daemon(make_settings(tmp_path), console=False) as base,
        aiohttp.ClientSession() as client,
    ):
        async with client.post(f"{base}/") as response:
            assert response.status == 404
        async with client.get(f"{base}/nothing-here") as response:
            assert response.status in (404, 405)
