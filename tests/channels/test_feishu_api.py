"""The Feishu REST client on ``httpx.MockTransport``: token caching and refresh, the size cap
on downloads, endpoint discovery's answers."""

from __future__ import annotations

import json

import httpx
import pytest

from bot.errors import AuthFailed, ChannelError, DownloadError, RateLimited
from channels.feishu.api import REFRESH_MARGIN_S, FeishuApi, TenantToken
from channels.feishu.discovery import EndpointError, discover, parse

ORIGIN = "http://127.0.0.1:9"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def token_server(issued: list[str]) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/tenant_access_token/internal"):
            issued.append(f"t-{len(issued) + 1}")
            return httpx.Response(200, json={"code": 0, "tenant_access_token": issued[-1],
                                              "expire": 7200})  # fmt: skip
        if request.url.path.endswith("/resources/big"):
            return httpx.Response(200, content=b"x" * 100)
        if request.url.path.endswith("/limited"):
            headers = {"x-ogw-ratelimit-reset": "7"}
            return httpx.Response(429, json={"code": 99991400, "msg": "limit"}, headers=headers)
        return httpx.Response(
            200, json={"code": 0, "data": {"auth": request.headers["authorization"]}}
        )

    return httpx.MockTransport(handle)


async def test_the_token_is_cached_until_shortly_before_it_expires() -> None:
    issued: list[str] = []
    clock = Clock()
    async with httpx.AsyncClient(base_url=ORIGIN, transport=token_server(issued)) as http:
        api = FeishuApi(http, TenantToken(http, "cli_x", "secret", clock))
        first = await api.call("GET", "/open-apis/x")
        clock.now += 7200 - REFRESH_MARGIN_S - 1
        second = await api.call("GET", "/open-apis/x")
        clock.now += 2
        third = await api.call("GET", "/open-apis/x")
    assert [first["auth"], second["auth"], third["auth"]] == [
        "Bearer t-1",
        "Bearer t-1",
        "Bearer t-2",
    ]
    assert issued == ["t-1", "t-2"]


async def test_rate_limits_and_oversized_downloads() -> None:
    async with httpx.AsyncClient(base_url=ORIGIN, transport=token_server([])) as http:
        api = FeishuApi(http, TenantToken(http, "cli_x", "secret"))
        with pytest.raises(RateLimited) as limited:
            await api.call("POST", "/open-apis/limited")
        with pytest.raises(DownloadError):
            await api.download("/open-apis/im/v1/messages/om_1/resources/big", {"type": "file"}, 50)
        data, _ = await api.download(
            "/open-apis/im/v1/messages/om_1/resources/big", {"type": "file"}, 100
        )
    assert limited.value.retry_after == 7.0
    assert data == b"x" * 100


def test_discovery_answers() -> None:
    config = {"ReconnectCount": 5, "ReconnectInterval": 1, "ReconnectNonce": 0, "PingInterval": 2}
    answer = {
        "code": 0,
        "data": {"URL": "ws://h/ws?device_id=d&service_id=1", "ClientConfig": config},
    }
    endpoint = parse(200, answer)
    assert endpoint.client_config == config
    partial = {"code": 0, "data": {"URL": "ws://h/ws", "ClientConfig": {"PingInterval": 2}}}
    assert parse(200, partial).client_config is None
    with pytest.raises(EndpointError) as busy:
        parse(200, {"code": 1, "msg": "busy"})
    assert busy.value.retryable
    with pytest.raises(EndpointError) as final:
        parse(200, {"code": 1000040350, "msg": "too many connections"})
    assert not final.value.retryable


@pytest.mark.parametrize(("code", "error"), [(10014, AuthFailed), (1, ChannelError)])
async def test_discovery_failures_are_typed(code: int, error: type[Exception]) -> None:
    def handle(_request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=json.dumps({"code": code, "msg": "no"}))

    async with httpx.AsyncClient(base_url=ORIGIN, transport=httpx.MockTransport(handle)) as http:
        with pytest.raises(error):
            await discover(http, "cli_x", "secret")
