"""Frozen records the fake Slack keeps: API calls, ephemeral messages, envelopes, deliveries and
scripted faults;
its lock is ``common.records.Guard``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

EVENTS_API = "events_api"
INTERACTIVE = "interactive"
MAX_RETRIES = 3  # Slack gives up on an event after three retries


class ApiError(Exception):
    """A Web API failure: ``error`` is Slack's code, ``detail`` lands in the ``errors`` list."""

    def __init__(self, error: str, detail: str = "") -> None:
        super().__init__(error)
        self.error = error
        self.detail = detail


@dataclass(frozen=True, slots=True, kw_only=True)
class Call:
    """One request the bot made: a Web API method, or a pseudo-method such as
    ``files.upload`` (bytes POSTed to an upload URL), ``files.download`` or ``response_url``."""

    method: str
    params: dict[str, Any]
    token: str | None
    at: float  # time.monotonic() when the request arrived
    ok: bool = True
    error: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Ephemeral:
    """A ``chat.postEphemeral`` message: shown to ``user`` alone, never stored in the channel."""

    channel: str
    user: str
    text: str
    blocks: list[dict[str, Any]] | None
    thread_ts: str | None
    ts: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Envelope:
    """An inbound payload as Slack would wrap it for Socket Mode (and POST it in HTTP mode)."""

    envelope_id: str
    kind: str  # EVENTS_API or INTERACTIVE
    payload: dict[str, Any]
    event_id: str | None = None
    retry_attempt: int = 0
    retry_reason: str = ""

    def to_socket(self) -> dict[str, Any]:
        frame: dict[str, Any] = {
            "envelope_id": self.envelope_id,
            "type": self.kind,
            "accepts_response_payload": False,
            "payload": self.payload,
        }
        if self.kind == EVENTS_API:
            frame["retry_attempt"] = self.retry_attempt
            frame["retry_reason"] = self.retry_reason
        return frame


@dataclass(frozen=True, slots=True, kw_only=True)
class Delivery:
    """One attempt to hand an envelope to the bot, over the socket or as an HTTP POST."""

    envelope_id: str
    kind: str
    event_id: str | None
    retry_attempt: int
    retry_reason: str
    via: str  # "socket" or "http"
    status: int | None = (
        None  # the bot's HTTP status in HTTP mode; None on the socket or on failure
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Fault:
    """A scripted failure for the next call(s) of one method."""

    error: str | None
    status: int
    retry_after: int | None
