"""The console's guard over plain HTTP, no browser: every route without a session gets the
login page or 401, every action without its CSRF token 403, and the login is rate-limited.

The console runs on a real SQLite store (PostgreSQL for two replicas' consoles on one shared
store) and a real aiohttp server; the routes are read from the mounted application, so a route
added later is covered without naming it here.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import aiohttp
import pytest
import yaml
from aiohttp import web
from itsdangerous.encoding import base64_decode, base64_encode

from bot.cli import main
from bot.config.loader import load_settings
from bot.config.settings import Settings
from bot.console.activity import percentile
from bot.console.login_links import make_link, take_link
from bot.errors import ConfigError
from bot.messages import utc_now
from bot.ports import Store
from bot.records import OutboxState, PairingRequest, Replica, UserStatus
from tests.bot.harness import make_settings
from tests.console.support import (
    IMAGES,
    TOKEN,
    Served,
    console_section,
    cookie_session,
    log_in,
    serve_console,
)
from tests.postgres import fresh_schema, require_postgres
from tests.store.support import item

PUBLIC = {"/console/login", "/console/login/once"}


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    async with serve_console(make_settings(tmp_path, console=console_section())) as found:
        yield found


def console_routes(app: web.Application) -> list[tuple[str, str]]:
    """(method, path) of every console route, path parameters filled in."""
    found: list[tuple[str, str]] = []
    for resource in app.router.resources():
        info = resource.get_info()
        apps = [info["app"]] if "app" in info else []
        for sub in apps:
            for route in sub.router.routes():
                if route.method == "HEAD":
                    continue
                path = re.sub(r"\{[^}]+\}", "x", route.resource.canonical if route.resource else "")
                found.append((route.method, path))
    return found


async def test_every_route_without_a_session_gets_the_login_page_or_401(served: Served) -> None:
    routes = console_routes(served.app)
    assert ("GET", "/console/trace") in routes
    assert ("POST", "/console/outbox/retry") in routes
    assert len(routes) >= 18
    async with aiohttp.ClientSession() as client:
        for method, path in [*routes, ("GET", "/console")]:
            async with client.request(
                method, served.base + path, allow_redirects=False
            ) as response:
                body = await response.text()
                where = f"{method} {path}"
                if path in PUBLIC:
                    assert response.status in (200, 401), where
                    assert 'name="token"' in body, where
                elif method == "GET" and not path.startswith(
                    ("/console/api/", "/console/partials/")
                ):
                    assert response.status == 302, where
                    assert response.headers["Location"].startswith("/console"), where
                else:
                    assert response.status == 401, where
                    assert "log in first" in body, where
        async with client.get(served.base + "/console/outbox") as followed:
            assert followed.url.path == "/console/login"
            assert 'name="token"' in await followed.text()
        async with client.get(
            served.base + "/console/", headers={"HX-Request": "true"}, allow_redirects=False
        ) as htmx:
            assert htmx.status == 401


async def test_a_forged_or_expired_cookie_is_no_session(served: Served) -> None:
    async with cookie_session() as client:
        await log_in(client, served.base)
        cookie = next(c for c in client.cookie_jar if c.key == "switchboard_console")
        payload, signature = cookie.value.split(".")
        body = json.loads(base64_decode(payload))
        body["exp"] += 1000
        forged = f"{base64_encode(json.dumps(body)).decode()}.{signature}"
    tampered = aiohttp.ClientSession(cookies={"switchboard_console": forged})
    async with (
        tampered as client,
        client.get(served.base + "/console/", allow_redirects=False) as page,
    ):
        assert page.status == 302


def _pairing(code: str) -> PairingRequest:
    now = utc_now()
    return PairingRequest(
        channel="telegram", user_id="77", display_name="Mallory's target", chat_id="77",
        code=code, created_at=now, expires_at=now + timedelta(hours=1),
    )  # fmt: skip


async def test_actions_without_a_valid_csrf_token_get_403_and_change_nothing(
    served: Served,
) -> None:
    await served.store.access.add_pairing(_pairing("ABC123"))
    posts = [path for method, path in console_routes(served.app) if method == "POST"]
    actions = [path for path in posts if path not in PUBLIC]
    assert "/console/access/approve" in actions
    async with cookie_session() as client:
        csrf = await log_in(client, served.base)
        for path in actions:
            for fields, headers in (
                ({"code": "ABC123", "all": "yes"}, {}),
                ({"code": "ABC123", "csrf": csrf[::-1] if csrf != csrf[::-1] else "forged"}, {}),
                (
                    {"code": "ABC123"},
                    {"X-CSRF-Token": csrf[:-1] + ("1" if csrf.endswith("0") else "0")},
                ),
            ):
                async with client.post(
                    served.base + path, data=fields, headers=headers, allow_redirects=False
                ) as response:
                    assert response.status == 403, path
                    assert "CSRF" in await response.text()
        assert [r.code for r in await served.store.access.pending_pairings(utc_now())] == ["ABC123"]
        async with client.post(served.base + "/console/logout") as logout:
            assert logout.status == 403  # a forged logout does not end the session either
        async with client.post(
            served.base + "/console/access/approve",
            data={"code": "abc123", "csrf": csrf},
            allow_redirects=False,
        ) as response:
            assert response.status == 303
            assert "approved" in response.headers["Location"]
    assert await served.store.access.pending_pairings(utc_now()) == []
    assert await served.store.access.status("telegram", "77") is UserStatus.APPROVED
    audit = await served.store.audit.recent(5)
    assert (audit[0].actor, audit[0].action) == ("console:tester", "pairing approve")


async def test_the_login_is_rate_limited(served: Served) -> None:
    async with cookie_session() as client:
        for _ in range(5):
            async with client.post(
                served.base + "/console/login", data={"token": "guess"}, allow_redirects=False
            ) as response:
                assert response.status == 401
                assert "not the console token" in await response.text()
        async with client.post(
            served.base + "/console/login", data={"token": "guess"}, allow_redirects=False
        ) as response:
            assert response.status == 429
            assert 1 <= int(response.headers["Retry-After"]) <= 60
        async with client.get(served.base + "/console/login/once?t=nope") as response:
            assert response.status == 429
        assert not [c for c in client.cookie_jar if c.key == "switchboard_console"]
        async with client.post(  # the right token is never locked out
            served.base + "/console/login", data={"token": TOKEN}, allow_redirects=False
        ) as response:
            assert response.status == 303


async def _cookie_flags(settings: Settings, headers: dict[str, str]) -> str:
    async with serve_console(settings) as found, aiohttp.ClientSession() as client, client.post(
        found.base + "/console/login", data={"token": TOKEN, "name": "ops"},
        headers=headers, allow_redirects=False,
    ) as response:  # fmt: skip
        assert response.status == 303
        return response.headers["Set-Cookie"]


async def test_the_session_cookie_is_httponly_strict_and_secure_behind_a_trusted_proxy(
    tmp_path: Path,
) -> None:
    https = {"X-Forwarded-Proto": "https"}
    plain = await _cookie_flags(make_settings(tmp_path / "a", console=console_section()), https)
    trusted = make_settings(tmp_path / "b", console=console_section(trust_forwarded_proto=True))
    behind_proxy = await _cookie_flags(trusted, https)
    assert "HttpOnly" in plain
    assert "SameSite=Strict" in plain
    assert "Path=/console" in plain
    assert "Secure" not in plain  # plain HTTP, and the header is not trusted
    assert "Secure" in behind_proxy
    assert "Secure" not in await _cookie_flags(trusted, {})


async def test_console_url_prints_a_link_that_works_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "switchboard.yaml"
    state = tmp_path / "state"
    config.write_text(
        yaml.safe_dump(
            {
                "config_version": 1,
                "state_dir": str(state),
                "console": {"enabled": True, "token": "x" * 20},
            }
        )
    )
    assert main(["console-url", "-c", str(config), "--name", "dana", "--base-url", "http://b"]) == 0
    url = capsys.readouterr().out.splitlines()[0]
    assert url.startswith("http://b/console/login/once?t=")
    settings = make_settings(state, console=console_section())
    async with serve_console(settings) as found, cookie_session() as client:
        link = found.base + url.removeprefix("http://b")
        async with client.get(link, allow_redirects=False) as response:
            assert response.status == 303
        async with client.get(found.base + "/console/audit", allow_redirects=False) as page:
            assert page.status == 200
            assert "dana" in await page.text()
        async with aiohttp.ClientSession() as again, again.get(link) as used:
            assert used.status == 401
            assert "used already" in await used.text()


def test_an_enabled_console_needs_its_token(tmp_path: Path) -> None:
    config = tmp_path / "switchboard.yaml"
    config.write_text("config_version: 1\nconsole:\n  enabled: true\n  token: ${CONSOLE_TOKEN}\n")
    with pytest.raises(ConfigError, match=r"console\.token: required when the console is enabled"):
        load_settings(config, {})
    assert load_settings(config, {}, require_secrets=False).console.enabled


def test_the_readme_shows_the_screenshots_the_browser_tests_take() -> None:
    readme = (IMAGES.parents[1] / "README.md").read_text()
    for name in ("console-overview.png", "console-trace.png"):
        assert f"docs/img/{name}" in readme
        assert (IMAGES / name).read_bytes().startswith(b"\x89PNG")


async def test_user_access_and_purges_go_through_the_cli_operations(served: Served) -> None:
    async with cookie_session() as client:
        csrf = await log_in(client, served.base, name="ops")
        fields = {"csrf": csrf, "channel": "slack", "user": "U1", "status": "deny"}
        async with client.post(served.base + "/console/access/user", data=fields) as response:
            assert "slack:U1 is now blocked" in await response.text()
        unconfirmed = {"csrf": csrf, "state": "dead", "confirm": "yes"}
        async with client.post(served.base + "/console/outbox/purge", data=unconfirmed) as page:
            assert "type dead in the box to confirm the purge" in await page.text()
        pending = {"csrf": csrf, "state": "pending", "confirm": "pending"}
        async with client.post(served.base + "/console/outbox/purge", data=pending) as page:
            assert "purge takes sent or dead rows" in await page.text()
        confirmed = {"csrf": csrf, "state": "dead", "confirm": "dead"}
        async with client.post(served.base + "/console/outbox/purge", data=confirmed) as page:
            assert "purged 0 dead row(s)" in await page.text()
    assert await served.store.access.status("slack", "U1") is UserStatus.DENIED
    actions = [(a.actor, a.action) for a in await served.store.audit.recent(5)]
    assert actions[:2] == [("console:ops", "outbox purge"), ("console:ops", "user deny")]


def test_answer_latency_percentiles_are_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 0.5), percentile(values, 0.95)) == (50.0, 95.0)
    assert percentile([3.0], 0.95) == 3.0
    assert percentile([], 0.5) is None


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can hand a file to another user")
def test_a_link_made_as_root_belongs_to_the_owner_of_the_state_dir(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    os.chown(state, 65534, 65534)  # the service user's state_dir
    link = make_link(state, "root", 60)
    (made,) = (state / "console-links").iterdir()
    assert (made.stat().st_uid, made.parent.stat().st_uid) == (65534, 65534)
    assert take_link(state, link.token) == "root"
    assert take_link(state, link.token) is None


async def _register(store: Store, replica_id: str) -> None:
    now = utc_now()
    await store.replicas.register(
        Replica(id=replica_id, host="h", pid=1, version="0", backend="postgres",
                started_at=now, heartbeat_at=now)
    )  # fmt: skip


async def test_two_replicas_consoles_see_and_act_on_one_shared_store(tmp_path: Path) -> None:
    url = require_postgres()
    async with fresh_schema(url) as schema:
        settings = make_settings(
            tmp_path, console=console_section(), store={"url": url, "schema": schema}
        )
        async with serve_console(settings) as a, serve_console(settings) as b:
            await _register(a.store, "replica-a")
            await _register(b.store, "replica-b")
            (row,) = await a.store.outbox.enqueue_rows([item("k1")])
            await a.store.outbox.mark_dead(row.id, "transient: 502")
            async with cookie_session() as on_a, cookie_session() as on_b:
                csrf_a = await log_in(on_a, a.base, name="ann")
                await log_in(on_b, b.base, name="ben")
                async with on_b.get(b.base + "/console/") as overview:
                    page = await overview.text()
                    assert "replica-a" in page
                    assert "replica-b" in page
                async with on_b.get(b.base + "/console/outbox") as outbox:
                    assert "transient: 502" in await outbox.text()
                retry = {"csrf": csrf_a, "row_id": str(row.id)}
                async with on_a.post(a.base + "/console/outbox/retry", data=retry) as done:
                    assert "revived 1 dead row(s)" in await done.text()
                async with on_b.get(b.base + "/console/audit") as audit:
                    assert "console:ann" in await audit.text()
            revived = await b.store.outbox.get(row.id)
            assert revived is not None
            assert revived.state is OutboxState.PENDING
