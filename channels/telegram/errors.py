"""``telegram.error`` → the kernel's ``SendError`` kinds, once, at the boundary (design §8).

PTB decides from the HTTP status (design §17.1): 429 with ``retry_after`` → ``RetryAfter``,
401/404 → ``InvalidToken``, 403 → ``Forbidden``, 400 → ``BadRequest`` (description without
its "Bad Request: " prefix), 409 → ``Conflict``, anything else → ``NetworkError``.

Messages never carry the bot token: PTB puts it into ``InvalidToken`` raised by
``initialize``, and file URLs contain it, so every message is redacted before it can reach a
log line, ``/readyz`` or the outbox's ``last_error``.
"""

from __future__ import annotations

import contextlib
import datetime as dtm
import os
from collections.abc import Iterator

from telegram import error as tg

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

# Opt in to PTB 22's future ``timedelta`` time periods. Without it PTB emits a deprecation
# warning each time it builds a ``RetryAfter`` (and whenever ``retry_after`` is read).
os.environ.setdefault("PTB_TIMEDELTA", "true")

_GONE_TARGETS = ("chat not found", "thread not found", "topic_deleted", "topic deleted")
_NO_RIGHTS = ("not enough rights", "have no rights", "need administrator rights")
_TOO_LARGE = ("entity too large", "file is too big")


class NotModified(InvalidRequest):
    """``editMessageText`` with the text the message already has; nothing to do."""


def retry_after_seconds(exc: tg.RetryAfter) -> float:
    value = exc.retry_after
    return value.total_seconds() if isinstance(value, dtm.timedelta) else float(value)


def redact(text: str, secret: str) -> str:
    return text.replace(secret, "<token>") if secret else text


def translate(exc: tg.TelegramError, secret: str = "") -> SendError:
    """The kernel error for a PTB error."""
    text = redact(exc.message, secret)
    if isinstance(exc, tg.RetryAfter):
        return RateLimited(text, retry_after=retry_after_seconds(exc))
    if isinstance(exc, tg.InvalidToken):
        return AuthFailed("Telegram rejected the bot token (401 Unauthorized)")
    if isinstance(exc, tg.ChatMigrated):
        return TargetNotFound(f"the group became the supergroup {exc.new_chat_id}")
    if isinstance(exc, tg.BadRequest):
        return _bad_request(text)
    if isinstance(exc, tg.Forbidden):
        return Forbidden(text)
    too_large = isinstance(exc, tg.NetworkError) and any(s in text.lower() for s in _TOO_LARGE)
    # TimedOut, NetworkError (5xx, resets) and Conflict are worth retrying.
    return InvalidRequest(text) if too_large else TransientSendError(text)


def _bad_request(text: str) -> SendError:
    lower = text.lower()
    if "message is not modified" in lower:
        return NotModified(text)
    if "message to edit not found" in lower:
        return MessageGone(text)
    if any(s in lower for s in _GONE_TARGETS):
        return TargetNotFound(text)
    if any(s in lower for s in _NO_RIGHTS):
        return Forbidden(text)
    return InvalidRequest(text)  # can't parse entities, text too long, bad markup…


@contextlib.contextmanager
def sdk_errors(secret: str = "") -> Iterator[None]:
    """Translate PTB errors raised inside the block (works around ``await`` too)."""
    try:
        yield
    except tg.TelegramError as exc:
        cause = None if isinstance(exc, tg.InvalidToken) else exc  # its message has the token
        raise translate(exc, secret) from cause
