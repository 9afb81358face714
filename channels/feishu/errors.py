"""Feishu Open API failures → the kernel's ``SendError`` kinds, once, at the boundary (design §8).

Every answer is the envelope ``{"code": 0, "msg": ..., "data": ...}``; a failure is a non-zero
``code`` (often with HTTP 400) and the decision is made from the code and the HTTP status:

- HTTP 429 or ``99991400`` → ``rate_limited``, waiting ``x-ogw-ratelimit-reset`` seconds;
- ``99991661``/``99991663`` (missing or invalid tenant token) → refreshed and retried once by
  ``api.py``; still refused → ``auth_failed``; ``10014``/``10003`` (app secret / id refused)
  → ``auth_failed``;
- bot not in the chat, outside the user's availability, missing scopes → ``forbidden``;
- a recalled/deleted message, a card or element that no longer exists → ``MessageGone``, an
  ``invalid_request`` that the adapter does not walk further down its ladder (the chat is
  still reachable, so not ``target_not_found``);
- invalid content, card JSON errors, too long → ``invalid_request`` (next rendering rung);
- HTTP 5xx, Feishu's internal-error codes, timeouts and connection errors → ``transient``.

An unknown code on a 4xx answer is ``invalid_request``: Feishu looked at the request and
refused it, so sending the same bytes again would not help.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping

import httpx

from bot.errors import (
    AuthFailed,
    Forbidden,
    InvalidRequest,
    MessageGone,
    RateLimited,
    SendError,
    TargetNotFound,
    TransientSendError,
)

RATE_LIMITED = 99991400
TOKEN_CODES = frozenset({99991661, 99991663, 99991664, 99991665, 99991671})
"""The tenant token is missing, invalid or expired: fetch a new one and retry once."""
CREDENTIAL_CODES = frozenset({10003, 10014, 99991543})
"""``tenant_access_token/internal`` refused the app id or secret."""
FORBIDDEN_CODES = frozenset(
    {
        230002,
        230006,
        230013,
        230027,
        230035,
        99991672,
        99991673,
        99991679,
    }
)
GONE_CODES = frozenset({230011, 230110, 231003, 200740, 300313})
TARGET_CODES = frozenset({230003, 232009, 232011})
TRANSIENT_CODES = frozenset({2200, 1000040343, 230020, 99991401})
RATE_CODES = frozenset({RATE_LIMITED, 230020, 11232, 11233})
RESET_HEADER = "x-ogw-ratelimit-reset"
DEFAULT_RATE_LIMIT_S = 1.0


class FeishuApiError(Exception):
    """A non-zero envelope ``code`` as answered (kept as the ``__cause__`` of the SendError)."""

    def __init__(self, code: int, msg: str, status: int) -> None:
        super().__init__(f"{code}: {msg}")
        self.code = code
        self.msg = msg
        self.status = status


def retry_after(headers: Mapping[str, str]) -> float:
    raw = headers.get(RESET_HEADER) or headers.get("retry-after")
    try:
        return max(0.0, float(raw)) if raw is not None else DEFAULT_RATE_LIMIT_S
    except ValueError:
        return DEFAULT_RATE_LIMIT_S


_BY_CODE: tuple[tuple[frozenset[int], type[SendError]], ...] = (
    (CREDENTIAL_CODES | TOKEN_CODES, AuthFailed),
    (FORBIDDEN_CODES, Forbidden),
    (GONE_CODES, MessageGone),
    (TARGET_CODES, TargetNotFound),
    (TRANSIENT_CODES, TransientSendError),
)


def translate(status: int, code: int, msg: str, headers: Mapping[str, str]) -> SendError:
    """The kernel error for a Feishu refusal (``msg`` is Feishu's, never message text)."""
    label = f"{code}: {msg[:200]}" if code else f"http_{status}"
    if status == 429 or code in RATE_CODES:
        return RateLimited(label, retry_after=retry_after(headers))
    for codes, kind in _BY_CODE:
        if code in codes:
            return kind(label)
    if status >= 500 or (status == 200 and code == 0):
        return TransientSendError(label)
    return InvalidRequest(label)


@contextlib.contextmanager
def transport_errors() -> Iterator[None]:
    """Translate httpx's timeouts and connection errors raised inside the block."""
    try:
        yield
    except httpx.HTTPError as exc:
        raise TransientSendError(f"{type(exc).__name__}: {exc}") from exc
