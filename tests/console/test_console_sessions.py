"""Console sessions: a cookie holds on every replica sharing the token until it expires, a
logout holds after a restart (it is kept in the store), and the login limit counts the real
client behind a trusted proxy and never locks out a right token."""

from __future__ import annotations

import hashlib
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from itsdangerous import URLSafeSerializer
from pydantic import ValidationError

from bot.config.settings import Settings
from bot.console.app import Console
from bot.console.auth import Session, SessionSigner
from bot.console.context import ConsoleDeps
from bot.hub import ChannelHub
from bot.registry import store_for
from tests.bot.harness import make_settings
from tests.console.support import TOKEN, console_section, cookie_session, log_in

COOKIE = "switchboard_console"


@asynccontextmanager
async def _console(settings: Settings) -> AsyncIterator[str]:
    """The console alone on a real store and server; its base URL."""
    store = store_for(settings)
    await store.open()
    app = web.Application()
    deps = ConsoleDeps(settings=lambda: settings, store=store, hub=ChannelHub(store.settings))
    Console(deps).mount(app)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        yield f"http://127.0.0.1:{server.port}"
    finally:
        await server.close()
        await store.aclose()


async def _status_with(base: str, cookie: str) -> int:
    async with cookie_session() as client:
        client.cookie_jar.update_cookies({COOKIE: cookie})
        async with client.get(f"{base}/console/api/activity", allow_redirects=False) as r:
            return r.status


async def test_a_logged_out_cookie_stays_out_after_a_restart(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, console=console_section())
    async with _console(settings) as base, cookie_session() as client:
        csrf = await log_in(client, base)
        (cookie,) = [c.value for c in client.cookie_jar if c.key == COOKIE]
        assert await _status_with(base, cookie) == 200
        async with client.post(
            f"{base}/console/logout", headers={"X-CSRF-Token": csrf}, allow_redirects=False
        ) as response:
            assert response.status == 303
        assert await _status_with(base, cookie) == 401
    async with _console(settings) as restarted:
        assert await _status_with(restarted, cookie) == 401


async def _login(base: str, token: str, client_address: str) -> int:
    async with cookie_session() as client, client.post(
        f"{base}/console/login", data={"token": token},
        headers={"X-Forwarded-For": f"{client_address}, 127.0.0.1"}, allow_redirects=False,
    ) as response:  # fmt: skip
        return response.status


async def test_behind_a_trusted_proxy_failures_count_per_real_client(tmp_path: Path) -> None:
    section = console_section(trusted_proxies=["127.0.0.1"])
    async with _console(make_settings(tmp_path, console=section)) as base:
        tries = [await _login(base, "guess", "203.0.113.5") for _ in range(6)]
        assert tries == [401] * 5 + [429]
        assert await _login(base, "guess", "198.51.100.7") == 401  # another client
        assert await _login(base, TOKEN, "198.51.100.7") == 303
        assert await _login(base, TOKEN, "203.0.113.5") == 303  # never locked out


async def test_without_trusted_proxies_the_header_is_ignored(tmp_path: Path) -> None:
    async with _console(make_settings(tmp_path, console=console_section())) as base:
        tries = [await _login(base, "guess", f"203.0.113.{n}") for n in range(6)]
        assert tries == [401] * 5 + [429]
        assert await _login(base, TOKEN, "203.0.113.99") == 303


def test_a_trusted_proxy_must_be_an_address_or_network(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=r"console\.trusted_proxies"):
        make_settings(tmp_path, console=console_section(trusted_proxies=["proxy.example"]))
    settings = make_settings(tmp_path, console=console_section(trusted_proxies=["10.0.0.0/8"]))
    assert settings.console.trusted_proxies == ("10.0.0.0/8",)


class _Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_a_session_holds_on_every_signer_of_the_token_until_it_expires() -> None:
    clock = _Clock(1_000_000.0)
    session, cookie = SessionSigner(TOKEN, clock).issue("ann <ops>", ttl_s=60)
    assert session.name == "annops"
    other_replica = SessionSigner(TOKEN, clock)  # another replica, or after a restart
    assert other_replica.verify(cookie) == session
    assert SessionSigner(TOKEN + "-changed", clock).verify(cookie) is None
    clock.now += 59
    assert other_replica.verify(cookie) == session
    clock.now += 1
    assert other_replica.verify(cookie) is None


def test_a_tampered_old_or_odd_cookie_is_no_session() -> None:
    signer = SessionSigner(TOKEN)
    _session, cookie = signer.issue("ann", ttl_s=60)
    payload, signature = cookie.split(".")
    for odd in (
        None, "", "nonsense", f"{payload}.{signature[:-2]}", f"{payload}x.{signature}",
        f"v1.YW5u.{int(time.time()) + 60}.nonce.{'0' * 43}",  # the hand-signed form before
        _signed(TOKEN, ["ann", "nonce", int(time.time()) + 60]),  # signed, but no session
        _signed(TOKEN, {"name": "ann", "nonce": "n", "exp": "9999999999"}),
    ):  # fmt: skip
        assert signer.verify(odd) is None, odd


def test_sessions_are_itsdangerous_tokens_under_the_console_salt() -> None:
    """The cookie is signed by itsdangerous, not by hand: one made with it is a session."""
    expires = int(time.time()) + 60
    cookie = _signed(TOKEN, {"name": "ann", "nonce": "n1", "exp": expires})
    session = SessionSigner(TOKEN).verify(cookie)
    assert session == Session(name="ann", nonce="n1", expires_at=float(expires))


def test_the_csrf_token_belongs_to_its_session_and_token() -> None:
    signer = SessionSigner(TOKEN)
    session, _ = signer.issue("ann", ttl_s=60)
    other, _ = signer.issue("ann", ttl_s=60)
    csrf = signer.csrf_token(session)
    assert signer.csrf_valid(session, csrf)
    assert SessionSigner(TOKEN).csrf_valid(session, csrf)
    assert not signer.csrf_valid(other, csrf)
    assert not SessionSigner(TOKEN + "-changed").csrf_valid(session, csrf)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    twin = csrf[:-1] + alphabet[alphabet.index(csrf[-1]) ^ 1]  # the same bytes, decoded
    for odd in (None, "", csrf[:-1], twin, "ü" * 10):
        assert not signer.csrf_valid(session, odd)


def _signed(token: str, body: object) -> str:
    key = hashlib.sha256(b"switchboard-console-session:" + token.encode()).digest()
    serializer = URLSafeSerializer(
        key, salt="switchboard-console-session", signer_kwargs={"digest_method": hashlib.sha256}
    )
    return serializer.dumps(body)
