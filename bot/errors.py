"""The error tree. Few, specific errors that carry the data a retry decision needs (design §8).

Adapters translate their SDK's exceptions into ``SendError`` subclasses at the boundary, so
the core decides what to do from ``kind`` alone and never sees ``telegram.error`` or
``SlackApiError``.
"""

from __future__ import annotations

from enum import StrEnum


class BotError(Exception):
    """Base of every error Switchboard raises on purpose."""


class ConfigError(BotError):
    """The configuration is invalid; the message names the key path. Exit status 78."""


class StoreError(BotError):
    """The durable store cannot be opened or written."""


class StoreBusy(StoreError):
    """Another connection holds the database's write lock past the busy timeout: transient."""


class InstanceLocked(StoreError):
    """Another Switchboard process holds the state directory."""


class ChatLost(BotError):
    """This replica's lease on the chat is gone (another replica took the chat over while it
    stalled): what it was doing for the chat is dropped, the new holder does it (design §11)."""


class AgentError(BotError):
    """An agent run failed; ``reason`` is what the user is told (design §6)."""

    def __init__(self, reason: str, *, detail: str = "") -> None:
        super().__init__(detail or reason)
        self.reason = reason
        self.detail = detail


class ChannelError(BotError):
    """A channel-level failure (connection, credentials)."""


class SendErrorKind(StrEnum):
    RATE_LIMITED = "rate_limited"
    TRANSIENT = "transient"
    INVALID_REQUEST = "invalid_request"
    FORBIDDEN = "forbidden"
    TARGET_NOT_FOUND = "target_not_found"
    AUTH_FAILED = "auth_failed"


class SendError(ChannelError):
    """A platform operation failed; ``kind`` decides retry, fallback or giving up."""

    kind = SendErrorKind.TRANSIENT

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        return self.kind in (SendErrorKind.RATE_LIMITED, SendErrorKind.TRANSIENT)


class RateLimited(SendError):
    kind = SendErrorKind.RATE_LIMITED


class TransientSendError(SendError):
    kind = SendErrorKind.TRANSIENT


class InvalidRequest(SendError):
    """The platform rejected the payload; the next rendering fallback may pass."""

    kind = SendErrorKind.INVALID_REQUEST


class MessageGone(InvalidRequest):
    """The message to edit or react to no longer exists (deleted, recalled, too old to edit).

    The chat is still reachable, so this is not ``target_not_found`` (which would mark the
    whole chat unreachable). A final edit that meets it is sent as a new message instead, so
    the answer still reaches the user; no simpler rendering of the edit is tried.
    """


class Forbidden(SendError):
    kind = SendErrorKind.FORBIDDEN


class TargetNotFound(SendError):
    kind = SendErrorKind.TARGET_NOT_FOUND


class AuthFailed(SendError):
    """Credentials were refused; the channel is parked (design §12)."""

    kind = SendErrorKind.AUTH_FAILED


class DownloadError(ChannelError):
    """An inbound attachment could not be fetched (too large, gone, refused)."""
