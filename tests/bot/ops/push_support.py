"""Talking to a daemon's push API (design §19) from tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp

from bot.app import Daemon
from bot.config.settings import Settings
from tests.bot.harness import make_settings

TOKEN = "s3cret-push-token"  # noqa: S105 - a test token


def push_settings(state_dir: Path, **sections: Any) -> Settings:
    """Settings with the push API on (and a small body limit, so 413 is cheap to reach)."""
    http = {"host": "127.0.0.1", "port": 0, "push_api": {"enabled": True, "token": TOKEN}}
    http.update(sections.pop("http", {}))
    return make_settings(state_dir, http=http, **sections)


def api_url(daemon: Daemon, path: str) -> str:
    assert daemon.http is not None
    return f"http://127.0.0.1:{daemon.http.port}{path}"


async def post(
    daemon: Daemon,
    body: dict[str, Any] | bytes,
    *,
    key: str | None = None,
    token: str | None = TOKEN,
) -> tuple[int, dict[str, Any], dict[str, str]]:
    """POST /api/v1/messages: status, JSON answer and headers."""
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if key is not None:
        headers["Idempotency-Key"] = key
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    async with (
        aiohttp.ClientSession() as session,
        session.post(api_url(daemon, "/api/v1/messages"), data=data, headers=headers) as response,
    ):
        return response.status, await response.json(), dict(response.headers)


async def delivery(daemon: Daemon, delivery_id: str, *, token: str = TOKEN) -> tuple[int, Any]:
    """GET /api/v1/deliveries/{id}: status and JSON answer."""
    headers = {"Authorization": f"Bearer {token}"}
    url = api_url(daemon, f"/api/v1/deliveries/{delivery_id}")
    async with aiohttp.ClientSession() as session, session.get(url, headers=headers) as response:
        return response.status, await response.json()
