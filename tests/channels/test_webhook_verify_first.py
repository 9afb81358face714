"""Every webhook authenticates the raw request before parsing it (design §14): unsigned or
malformed bodies get a 4xx and at most one log line, never a 500 or a traceback; deeply
nested JSON is a 400, not a ``RecursionError``."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from channels.telegram.webhook import SECRET_HEADER, WebhookReceiver
from tests.channels.feishu_support import feishu_daemon, feishu_settings
from tests.channels.slack_support import slack_daemon, slack_settings
from tests.fakes.agent import FakeAgent
from tests.fakes.feishu_api import FakeFeishu
from tests.fakes.slack_api import FakeSlack

DEEP = b"[" * 100_000 + b"]" * 100_000
"""Far deeper than Python's recursion limit."""


async def _post(url: str, body: bytes, headers: dict[str, str] | None = None) -> int:
    sent = {"Content-Type": "application/json", **(headers or {})}
    async with aiohttp.ClientSession() as session, session.post(url, data=body, headers=sent) as r:
        return r.status


def _no_tracebacks(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


async def test_slack_refuses_unsigned_bodies_before_parsing_them(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with FakeSlack() as fake:
        agent = FakeAgent()
        settings = slack_settings(tmp_path, fake, mode="http")
        async with slack_daemon(settings, fake, agent) as run:
            garbage = await _post(run.events_url, b"{not json")
            deep = await _post(run.events_url, DEEP)
            form = await _post(
                run.events_url,
                b"payload=%7B%7B",
                {"Content-Type": "application/x-www-form-urlencoded"},
            )
            fake.set_http_target(run.events_url)
            signed_deep = await asyncio.to_thread(fake.post_signed, DEEP)
    assert (garbage, deep, form) == (401, 401, 401)
    assert signed_deep == 400
    assert agent.runs == []
    assert _no_tracebacks(caplog) == []


async def test_feishu_answers_malformed_and_deeply_nested_bodies_with_400(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with FakeFeishu(encrypt_key="") as fake:
        agent = FakeAgent()
        settings = feishu_settings(tmp_path, fake, mode="webhook")
        async with feishu_daemon(settings, fake, agent) as run:
            deep = await _post(run.events_url, DEEP)
            deep_object = await _post(run.events_url, b'{"a":' * 50_000 + b"1" + b"}" * 50_000)
            garbage = await _post(run.events_url, b"\xff{")
    assert (deep, deep_object, garbage) == (400, 400, 400)
    assert agent.runs == []
    assert _no_tracebacks(caplog) == []


async def test_feishu_with_an_encrypt_key_checks_the_signature_before_parsing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with FakeFeishu() as fake:
        settings = feishu_settings(tmp_path, fake, mode="webhook")
        async with feishu_daemon(settings, fake, FakeAgent()) as run:
            signed_headers = {
                "X-Lark-Request-Timestamp": "1700000000",
                "X-Lark-Request-Nonce": "n",
                "X-Lark-Signature": "0" * 64,
            }
            forged = await _post(run.events_url, DEEP, signed_headers)
    assert forged == 401
    assert _no_tracebacks(caplog) == []


async def test_an_empty_telegram_secret_never_matches_a_missing_header() -> None:
    """Even if an empty secret got past the configuration check, the receiver fails closed."""
    handled: list[dict[str, object]] = []

    async def handle(update: dict[str, object]) -> bool:
        handled.append(update)
        return True

    app = web.Application()
    app.router.add_post("/hook", WebhookReceiver("", handle).handle)
    update = json.dumps({"update_id": 1}).encode()
    async with TestServer(app, host="127.0.0.1") as server:
        url = str(server.make_url("/hook"))
        missing = await _post(url, update)
        empty = await _post(url, update, {SECRET_HEADER: ""})
    assert (missing, empty) == (403, 403)
    assert handled == []
