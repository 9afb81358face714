"""The error codes the fake answers with, and where each comes from.

[doc]: DingTalk's published error table for that API; [platforms]: /work/shared/docs/PLATFORMS.md
§4; [recalled]: seen in real DingTalk answers but not checked against a table here; [chosen]:
a plausible pick where no source was at hand (the adapter should key on the HTTP status and
the code family, not on these exact strings).

Two shapes. OpenAPI (``/v1.0/...``) fails with a 4xx/5xx status and
``{"code": "<string>", "message", "requestid"}``. The legacy oapi (``oapi.dingtalk.com``:
``/gettoken``, ``/media/upload``) and session webhooks answer **HTTP 200** with
``{"errcode": <int>, "errmsg"}``: a client that only checks the status misses these errors.
"""

from __future__ import annotations

import secrets
from typing import Any

from tests.fakes.dingtalk.records import ApiError

# --- OpenAPI /v1.0: auth and gateway ---------------------------------------------------------
INVALID_CLIENT = "invalidClientIdOrSecret"  # [doc] HTTP 400 from POST /v1.0/oauth2/accessToken
INVALID_CLIENT_MSG = "无效的clientId或者clientSecret"
# [platforms] HTTP 401 for a missing/unknown/revoked token, and (with another message) for bad
# credentials on connections/open
INVALID_AUTH = "InvalidAuthentication"
INVALID_AUTH_MSG = "不合法的access_token"
API_NOT_FOUND = "InvalidAction.NotFound"  # [recalled] HTTP 404 for an unknown /v1.0 path
INVALID_PARAMETER = "InvalidParameter"  # [chosen] HTTP 400, a body that isn't what the API takes

# --- OpenAPI /v1.0: throttling and server errors ----------------------------------------------
THROTTLED = "Throttling.Api"  # [recalled] HTTP 429, the API gateway's flow control
QPS_LIMIT = "Forbidden.AccessDenied.QpsLimitForApi"  # [recalled] HTTP 403, per-app QPS limit
INTERNAL_ERROR = "InternalError"  # [chosen] what ``fail_server_error`` answers (HTTP 500)

# --- OpenAPI /v1.0/robot ----------------------------------------------------------------------
ROBOT_CODE = "InvalidParameter.RobotCode"  # [chosen] robotCode isn't this app's client id
MSG_KEY = "InvalidParameter.MsgKey"  # [chosen] msgKey isn't one the fake knows
MSG_PARAM = "InvalidParameter.MsgParam"  # [chosen] msgParam not a JSON string with the keys
MSG_PARAM_TOO_LONG = "InvalidParameter.MsgParam.TooLong"  # [chosen] msgParam > 15000 bytes
# [chosen] groupMessages/send to a group the robot isn't in (never added, or removed): no
# table was found; real DingTalk answers HTTP 400 with a code in this spirit.
ROBOT_NOT_IN_GROUP = "robot.not.in.group"
DOWNLOAD_CODE = "InvalidParameter.DownloadCode"  # [chosen] HTTP 400, unknown downloadCode

# --- OpenAPI /v1.0/card (AI cards) -------------------------------------------------------------
CARD_TEMPLATE = "InvalidParameter.CardTemplateId"  # [chosen] template not registered
CARD_PARAM = "InvalidParameter.CardData"  # [chosen] bad cardParamMap / callbackType / models
OUT_TRACK_ID_USED = "InvalidParameter.OutTrackIdDuplicated"  # [chosen] create with a used id
CARD_NOT_FOUND = "InvalidParameter.OutTrackId"  # [chosen] no instance with that outTrackId
CARD_NOT_DELIVERED = "InvalidOperation.CardNotDelivered"  # [chosen] streaming before deliver
CARD_FINISHED = "InvalidOperation.CardFinished"  # [chosen] streaming after flowStatus 3/5
SPACE_INVALID = "InvalidParameter.OpenSpaceId"  # [chosen] bad or unknown deliver target

# --- legacy oapi: HTTP 200 + errcode ---------------------------------------------------------
OAPI_BAD_APP = 40089  # [recalled] /gettoken with a wrong appkey/appsecret
OAPI_BAD_APP_MSG = "不合法的appkey或appSecret"
OAPI_TOKEN = 40014  # [doc] missing/unknown/revoked access_token
OAPI_TOKEN_MSG = "不合法的access_token"  # noqa: S105 - a message, not a secret
OAPI_MEDIA_TYPE = 40004  # [doc] "不合法的媒体文件类型": type not image/file/voice/video
OAPI_FILE_TYPE = 40005  # [doc] "不合法的文件类型": an image upload that isn't an image
OAPI_FILE_SIZE = 40006  # [doc] "不合法的文件大小": empty, or over the limit for its type
OAPI_MISSING = 40035  # [recalled] "缺少参数": no ``media`` part / a webhook body without fields

# --- session webhooks: HTTP 200 + errcode ------------------------------------------------------
# [platforms/chosen] Real DingTalk answers an expired or unknown sessionWebhook with an errcode
# in an HTTP 200 body (300001 is also what a custom robot's unknown token gets), so a client
# that only checks the status thinks the reply went out.
SESSION_EXPIRED = 300001
SESSION_EXPIRED_MSG = "session webhook expired"
SEND_TOO_FAST = 130101  # [recalled] robot sends over 20/minute, HTTP 200
SEND_TOO_FAST_MSG = "send too fast, exceed 20 times per minute"
MESSAGE_TOO_LONG = 460101  # [recalled] text/markdown over 20000 bytes, HTTP 200
MESSAGE_TOO_LONG_MSG = "message too long, exceed 20000 bytes"


def request_id() -> str:
    return secrets.token_hex(16).upper()


def openapi_body(code: str, message: str) -> dict[str, Any]:
    return {"code": code, "message": message, "requestid": request_id()}


def openapi(http_status: int, code: str, message: str) -> ApiError:
    """An OpenAPI failure: ``http_status`` with ``{"code", "message", "requestid"}``."""
    return ApiError(http_status, openapi_body(code, message))


def bad(code: str, message: str) -> ApiError:
    """The usual OpenAPI validation failure, HTTP 400."""
    return openapi(400, code, message)


def errcode(code: int, message: str) -> ApiError:
    """An oapi / session-webhook failure: HTTP 200 with ``{"errcode", "errmsg"}``."""
    return ApiError(200, {"errcode": code, "errmsg": message})


def unauthenticated() -> ApiError:
    return openapi(401, INVALID_AUTH, INVALID_AUTH_MSG)
