"""Credentials: tenant/app access tokens, long-connection endpoint discovery, bot info.

Wrong app credentials (or ``refuse_credentials``) answer code 10014 "app secret invalid": HTTP
400 from the token endpoints, HTTP 200 from discovery, where any other status (and codes 1 and
1000040343) would be retried by ``ws.Client`` as a ``ServerException``; 10014 makes it raise
``ClientException`` and give up, as it should for bad credentials.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

from tests.fakes.feishu import codes
from tests.fakes.feishu.records import ApiError
from tests.fakes.feishu.wire import ApiRequest, Reply, Route, TopLevel
from tests.fakes.feishu.world import World

CLIENT_CONFIG = {
    "ReconnectCount": 5,
    "ReconnectInterval": 1,
    "ReconnectNonce": 0,
    "PingInterval": 2,
}


class Credentials:
    def __init__(self, world: World, origin: Callable[[], str]) -> None:
        self._world = world
        self._origin = origin
        self.client_config: dict[str, int] = dict(CLIENT_CONFIG)
        self.tickets: set[str] = set()
        self.service_id = 7

    def routes(self) -> list[Route]:
        base = "/open-apis/auth/v3"
        return [
            Route("POST", f"{base}/tenant_access_token/internal", "auth.tenant_access_token",
                  self.tenant_token, auth=False),
            Route("POST", f"{base}/app_access_token/internal", "auth.app_access_token",
                  self.app_token, auth=False),
            Route("POST", "/callback/ws/endpoint", "ws.endpoint", self.endpoint, auth=False),
            Route("GET", "/open-apis/bot/v3/info", "bot.info", self.bot_info),
        ]  # fmt: skip

    def _check(self, app_id: object, app_secret: object, *, http_status: int = 400) -> None:
        ids = self._world.ids
        if self._world.refuse_credentials or (app_id, app_secret) != (ids.app_id, ids.app_secret):
            raise ApiError(codes.APP_SECRET_INVALID, "app secret invalid", http_status=http_status)

    def tenant_token(self, request: ApiRequest) -> Reply:
        self._check(request.field("app_id"), request.field("app_secret"))
        token = self._world.issue_token()
        return TopLevel({"tenant_access_token": token, "expire": self._world.token_expire_s})

    def app_token(self, request: ApiRequest) -> Reply:
        self._check(request.field("app_id"), request.field("app_secret"))
        token = self._world.issue_token()
        fields = {
            "app_access_token": token.replace("t-", "a-", 1),
            "tenant_access_token": token,
            "expire": self._world.token_expire_s,
        }
        return TopLevel(fields)

    def endpoint(self, request: ApiRequest) -> Reply:
        # HTTP 200: the SDK retries any other status as a server error
        self._check(request.field("AppID"), request.field("AppSecret"), http_status=200)
        ticket = secrets.token_hex(8)
        self.tickets.add(ticket)
        device_id = secrets.token_hex(6)
        origin = self._origin().replace("http://", "ws://", 1)
        url = f"{origin}/ws?device_id={device_id}&service_id={self.service_id}&ticket={ticket}"
        return {"URL": url, "ClientConfig": dict(self.client_config)}

    def bot_info(self, request: ApiRequest) -> Reply:
        ids = self._world.ids
        bot: dict[str, Any] = {
            "activate_status": 2,
            "app_name": ids.bot_name,
            "avatar_url": "https://example.invalid/avatar.png",
            "ip_white_list": [],
            "open_id": ids.bot_open_id,
        }
        return TopLevel({"bot": bot})
