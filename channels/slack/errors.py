"""Slack Web API failures → the kernel's ``SendError`` kinds, once, at the boundary (design §8).

slack_sdk raises ``SlackApiError`` for anything but HTTP 200 with ``"ok": true`` (design §17
§2), so the decision is made from the HTTP status and Slack's ``error`` code:

- 429 (with ``Retry-After``) or ``ratelimited`` → ``rate_limited``;
- ``channel_not_found`` / ``not_in_channel`` and friends → ``target_not_found``;
- ``is_archived`` / ``restricted_action`` and other refusals → ``forbidden``;
- ``invalid_auth`` / ``token_revoked`` / ``account_inactive`` … → ``auth_failed`` (parks);
- ``invalid_blocks`` / ``msg_too_long`` / ``invalid_arguments`` … → ``invalid_request`` (the
  kernel then tries plain text);
- 5xx, Slack's own ``internal_error``-style codes, timeouts and connection errors →
  ``transient``.

An unknown ``error`` code on a 2xx/4xx answer is ``invalid_request``: Slack looked at the
request and refused it, so retrying the same bytes would not help.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError

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

AUTH_ERRORS = frozenset(
    {
        "invalid_auth",
        "token_revoked",
        "account_inactive",
        "not_authed",
        "token_expired",
        "org_login_required",
        "team_access_not_granted",
        "two_factor_setup_required",
    }
)
TARGET_ERRORS = frozenset(
    {
        "channel_not_found",
        "not_in_channel",
        "user_not_found",
        "thread_not_found",
        "is_inactive",
        "channel_is_archived_or_deleted",
    }
)
FORBIDDEN_ERRORS = frozenset(
    {
        "is_archived",
        "restricted_action",
        "restricted_action_read_only_channel",
        "restricted_action_thread_only_channel",
        "restricted_action_non_threadable_channel",
        "missing_scope",
        "no_permission",
        "ekm_access_denied",
        "not_allowed_token_type",
        "access_denied",
        "cannot_dm_bot",
        "team_not_found",
    }
)
TRANSIENT_ERRORS = frozenset(
    {
        "internal_error",
        "fatal_error",
        "service_unavailable",
        "request_timeout",
        "team_added_to_org",
        "upstream_error",
    }
)
GONE_ERRORS = frozenset({"message_not_found", "cant_update_message", "edit_window_closed"})
DEFAULT_RATE_LIMIT_S = 1.0


def error_code(exc: SlackApiError) -> str:
    data = exc.response.data if exc.response is not None else None
    code = data.get("error") if isinstance(data, dict) else None
    return str(code) if code else ""


def retry_after(exc: SlackApiError) -> float | None:
    headers = exc.response.headers if exc.response is not None else {}
    raw = headers.get("Retry-After") or headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except (TypeError, ValueError):
        return None


_BY_CODE: tuple[tuple[frozenset[str], type[SendError]], ...] = (
    (TARGET_ERRORS, TargetNotFound),
    (FORBIDDEN_ERRORS, Forbidden),
    (GONE_ERRORS, MessageGone),
    (TRANSIENT_ERRORS, TransientSendError),
)


def translate(exc: SlackApiError) -> SendError:
    """The kernel error for a Slack API refusal."""
    code = error_code(exc)
    status = exc.response.status_code if exc.response is not None else 0
    message = code or f"http_{status}"
    if status == 429 or code == "ratelimited":
        return RateLimited(message, retry_after=retry_after(exc) or DEFAULT_RATE_LIMIT_S)
    if code in AUTH_ERRORS:
        return AuthFailed(f"Slack refused the token ({code})")
    for codes, kind in _BY_CODE:
        if code in codes:
            return kind(message)
    if status >= 500:
        return TransientSendError(message)
    return InvalidRequest(message)


@contextlib.contextmanager
def sdk_errors() -> Iterator[None]:
    """Translate slack_sdk and transport errors raised inside the block."""
    try:
        yield
    except SlackApiError as exc:
        raise translate(exc) from exc
    except (aiohttp.ClientError, SlackClientError, TimeoutError, OSError) as exc:
        raise TransientSendError(f"{type(exc).__name__}: {exc}") from exc
