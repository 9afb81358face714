"""DingTalk failures → the kernel's ``SendError`` kinds, once, at the boundary (design §8).

DingTalk answers in two shapes: the OpenAPI (``/v1.0/...``) with an HTTP status and
``{"code": "...", "message": "..."}``, and the legacy oapi host and session webhooks with
HTTP 200 and ``{"errcode": N, "errmsg": "..."}``. Both are read here:

- HTTP 429, a ``Throttling*`` / ``*QpsLimit*`` code, or the per-second/per-minute errcodes →
  ``rate_limited`` (``Retry-After`` when given, else a delay fitting the limit that was hit);
- HTTP 401, ``InvalidAuthentication`` or an invalid-token errcode → the token is refetched and
  the call retried once by ``api.py``; still refused → ``auth_failed``;
- a robot outside the group, no permission → ``forbidden``; an unknown user or group →
  ``target_not_found``;
- HTTP 5xx, ``-1`` (system busy), timeouts and connection errors → ``transient``;
- any other refusal → ``invalid_request`` (DingTalk looked at the request and said no).

Session webhooks answer "expired" (errcode 300001 and relatives) once their
``sessionWebhookExpiredTime`` has passed: that is ``SessionExpired``, which the outbound code
turns into a send through the OpenAPI instead of an error.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp

from bot.errors import (
    AuthFailed,
    Forbidden,
    InvalidRequest,
    RateLimited,
    SendError,
    TargetNotFound,
    TransientSendError,
)

Json = dict[str, Any]

TOKEN_ERRCODES = frozenset({40001, 40014, 42001})
"""oapi: the access_token is invalid or expired."""
CREDENTIAL_ERRCODES = frozenset({40089, 40013, 40091, 40096})
"""oapi ``/gettoken``: the appkey or appsecret was refused."""
CREDENTIAL_CODES = frozenset(
    {
        "InvalidAuthentication",
        "invalidClientIdOrSecret",
        "invalidAppKeyOrSecret",
        "Forbidden.AccessDenied.AccessTokenPermissionDenied",
    }
)
PER_SECOND_ERRCODES = frozenset({90018, 90002})
PER_MINUTE_ERRCODES = frozenset({90005, 90006, 41047, 41048, 88})
"""The per-minute API quotas: waiting a full minute is the smallest wait that surely helps."""
SEND_TOO_FAST = 130101
"""A robot sent more than 20 messages a minute into one chat ("send too fast"). The chat's
minute is what is full, not the app's quota: a session-webhook send is sent again through the
OpenAPI at once (``ChatThrottled``); elsewhere it waits ``CHAT_THROTTLE_S`` (plus the
outbox's jitter), the group pace that keeps a chat within 20 a minute, not a whole minute."""
CHAT_THROTTLE_S = 3.0
SESSION_EXPIRED_ERRCODES = frozenset({300001, 300005, 310000})
NOT_IN_CHAT_MARKERS = ("notingroup", "not.in.group", "robotnotingroup", "nopermission")
TARGET_MARKERS = ("notexist", "notfound", "invaliduserid", "invalidstaffid", "staffid")
TRANSIENT_ERRCODES = frozenset({-1, 90001})
PER_SECOND_S = 1.0
PER_MINUTE_S = 60.0


class DingTalkApiError(Exception):
    """A refusal as answered (kept as the ``__cause__`` of the SendError)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{code or status}: {message}")
        self.status = status
        self.code = code
        self.message = message


class ChatThrottled(RateLimited):
    """Too many robot messages into one chat this minute (``SEND_TOO_FAST``)."""


class SessionExpired(InvalidRequest):
    """The session webhook no longer takes messages; send through the OpenAPI instead."""


def code_of(body: Json) -> str:
    """The refusal code of either answer shape, as a string (``""`` when none)."""
    if body.get("code") not in (None, "", 0, "0"):
        return str(body["code"])
    errcode = body.get("errcode")
    if errcode not in (None, 0, "0"):
        return str(errcode)
    return ""


def _errcode(code: str) -> int | None:
    try:
        return int(code)
    except ValueError:
        return None


def retry_after(headers: Mapping[str, str], default: float) -> float:
    raw = headers.get("Retry-After") or headers.get("retry-after")
    try:
        return max(0.0, float(raw)) if raw is not None else default
    except ValueError:
        return default


def is_token_refusal(status: int, body: Json) -> bool:
    """The access token (not the app) was refused: refetch it and try once more."""
    code = code_of(body)
    errcode = _errcode(code)
    return status == 401 or code == "InvalidAuthentication" or errcode in TOKEN_ERRCODES


def failure(status: int, body: Json, headers: Mapping[str, str]) -> SendError | None:
    """The error an answer stands for, or ``None`` when it succeeded."""
    code = code_of(body)
    if not code and status < 400:
        return None
    message = str(body.get("message") or body.get("errmsg") or "")[:200]
    error = translate(status, code, message, headers)
    error.__cause__ = DingTalkApiError(status, code, message)
    return error


def translate(  # noqa: PLR0911 - one decision table
    status: int, code: str, message: str, headers: Mapping[str, str]
) -> SendError:
    label = f"{code}: {message}" if code else f"http_{status}"
    errcode = _errcode(code)
    folded = code.lower().replace("_", "")
    if errcode in SESSION_EXPIRED_ERRCODES:
        return SessionExpired(label)
    if status == 429 or folded.startswith("throttling") or "qpslimit" in folded:
        return RateLimited(label, retry_after=retry_after(headers, PER_SECOND_S))
    if errcode in PER_SECOND_ERRCODES:
        return RateLimited(label, retry_after=retry_after(headers, PER_SECOND_S))
    if errcode == SEND_TOO_FAST:
        return ChatThrottled(label, retry_after=retry_after(headers, CHAT_THROTTLE_S))
    if errcode in PER_MINUTE_ERRCODES:
        return RateLimited(label, retry_after=retry_after(headers, PER_MINUTE_S))
    if status == 401 or code in CREDENTIAL_CODES or errcode in CREDENTIAL_ERRCODES | TOKEN_ERRCODES:
        return AuthFailed(label)
    if any(marker in folded for marker in NOT_IN_CHAT_MARKERS) or status == 403:
        return Forbidden(label)
    if any(marker in folded for marker in TARGET_MARKERS) or status == 404:
        return TargetNotFound(label)
    if status >= 500 or errcode in TRANSIENT_ERRCODES:
        return TransientSendError(label)
    return InvalidRequest(label)


@contextlib.asynccontextmanager
async def transport_errors() -> AsyncIterator[None]:
    """Translate aiohttp's timeouts and connection errors raised inside the block."""
    try:
        yield
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise TransientSendError(f"{type(exc).__name__}: {exc}") from exc
