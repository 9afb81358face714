"""A bare client of the fake's wire, for tests that must look at frames or misbehave where
the SDK would not: ``connections/open`` + websocket with aiohttp, OpenAPI calls with httpx."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import aiohttp
import httpx

from tests.fakes.dingtalk.fake import FakeDingTalk
from tests.fakes.dingtalk.frames import CALLBACK, CHATBOT_TOPIC
from tests.fakes.dingtalk.gateway import OPEN_PATH
from tests.fakes.dingtalk.wire import TOKEN_HEADER

CHATBOT = ({"type": CALLBACK, "topic": CHATBOT_TOPIC},)
WAIT_S = 5.0


async def open_url(
    session: aiohttp.ClientSession,
    fake: FakeDingTalk,
    subscriptions: tuple[dict[str, str], ...] = CHATBOT,
) -> str:
    """``connections/open`` as the SDK does it; returns the websocket URL (ticket included)."""
    body = {
        "clientId": fake.client_id,
        "clientSecret": fake.client_secret,
        "subscriptions": list(subscriptions),
        "ua": "raw-test-client",
        "localIp": "127.0.0.1",
    }
    async with session.post(f"{fake.origin}{OPEN_PATH}", json=body) as answer:
        got = await answer.json()
    return f"{got['endpoint']}?ticket={got['ticket']}"


async def next_frame(ws: aiohttp.ClientWebSocketResponse) -> dict[str, Any]:
    """The next frame (within 5 s), decoded; ``data`` stays the JSON string it is on the wire."""
    message = await ws.receive(timeout=WAIT_S)
    if message.type != aiohttp.WSMsgType.TEXT:
        raise AssertionError(f"expected a text frame, got {message.type!r}")
    frame: dict[str, Any] = json.loads(message.data)
    return frame


def ack(frame: dict[str, Any], data: Any = None, code: int = 200) -> str:
    """The ack the SDK would send for ``frame`` (``data`` defaults to a callback's)."""
    headers = {"contentType": "application/json", "messageId": frame["headers"]["messageId"]}
    payload = {"response": "OK"} if data is None else data
    return json.dumps(
        {"code": code, "headers": headers, "message": "OK", "data": json.dumps(payload)}
    )


@contextlib.contextmanager
def openapi_client(fake: FakeDingTalk) -> Iterator[httpx.Client]:
    """An httpx client on ``fake.origin`` carrying a fresh token in its headers."""
    with httpx.Client(base_url=fake.origin) as client:
        answer = client.post(
            "/v1.0/oauth2/accessToken",
            json={"appKey": fake.client_id, "appSecret": fake.client_secret},
        )
        client.headers[TOKEN_HEADER] = answer.json()["accessToken"]
        yield client
