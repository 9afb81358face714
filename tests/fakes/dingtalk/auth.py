"""Access tokens: ``POST /v1.0/oauth2/accessToken`` (OpenAPI) and ``GET /gettoken`` (oapi).

Both draw from **one** token store, as for a real internal app whose two token endpoints hand
out interchangeable tokens: a token from either works on ``/v1.0`` (header
``x-acs-dingtalk-access-token``) and on ``/media/upload`` (``?access_token=``). Every fetch
issues a fresh token (``tokens_issued`` shows each); all stay valid until ``revoke_tokens()``.

Wrong credentials (or ``refuse_credentials``): ``accessToken`` answers HTTP 400
``invalidClientIdOrSecret`` (DingTalk's documented answer), ``gettoken`` HTTP 200 with
errcode 40089.
"""

from __future__ import annotations

from tests.fakes.dingtalk import codes
from tests.fakes.dingtalk.wire import ApiRequest, Reply, Route
from tests.fakes.dingtalk.world import World


class Auth:
    def __init__(self, world: World) -> None:
        self._world = world

    def routes(self) -> list[Route]:
        return [
            Route("POST", "/v1.0/oauth2/accessToken", self.access_token, auth="none"),
            Route("GET", "/gettoken", self.gettoken, auth="none", errcode=True),
        ]

    def _valid(self, key: object, secret: object) -> bool:
        ids = self._world.ids
        return not self._world.refuse_credentials and (key, secret) == (
            ids.client_id,
            ids.client_secret,
        )

    def access_token(self, request: ApiRequest) -> Reply:
        if not self._valid(request.field("appKey"), request.field("appSecret")):
            raise codes.openapi(400, codes.INVALID_CLIENT, codes.INVALID_CLIENT_MSG)
        return {"accessToken": self._world.issue_token(), "expireIn": self._world.token_expire_s}

    def gettoken(self, request: ApiRequest) -> Reply:
        if not self._valid(request.query.get("appkey"), request.query.get("appsecret")):
            raise codes.errcode(codes.OAPI_BAD_APP, codes.OAPI_BAD_APP_MSG)
        return {
            "errcode": 0,
            "errmsg": "ok",
            "access_token": self._world.issue_token(),
            "expires_in": self._world.token_expire_s,
        }
