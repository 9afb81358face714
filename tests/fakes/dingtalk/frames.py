"""Stream frames (PLATFORMS §4 "Stream protocol"): what the fake writes, and the acks it reads.

Out: ``{"specVersion": "1.0", "type": "SYSTEM|EVENT|CALLBACK", "headers": {"appId",
"connectionId", "contentType": "application/json", "messageId", "time": "<ms>", "topic"},
"data": "<JSON string>"}``; EVENT frames add ``eventId``/``eventType``/``eventBornTime``/
``eventCorpId``/``eventUnifiedAppId`` headers.
In: ``{"code": 200, "headers": {"contentType": "application/json", "messageId": "<same>"},
"message": "OK", "data": "<JSON string>"}``, checked strictly: a malformed ack is a protocol
error, never a guess.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

CALLBACK = "CALLBACK"
EVENT = "EVENT"
SYSTEM = "SYSTEM"
CHATBOT_TOPIC = "/v1.0/im/bot/messages/get"
PING = "ping"
DISCONNECT = "disconnect"


@dataclass(frozen=True, slots=True, kw_only=True)
class Outgoing:
    """A frame waiting for (or written to) a socket; a redelivery is the same with
    ``attempt + 1``."""

    message_id: str
    kind: str
    topic: str
    data: dict[str, Any]
    attempt: int = 1
    headers: dict[str, str] = field(default_factory=dict)  # extra headers (EVENT frames)


def encode(item: Outgoing, *, app_id: str, connection_id: str) -> str:
    headers = {
        "appId": app_id,
        "connectionId": connection_id,
        "contentType": "application/json",
        "messageId": item.message_id,
        "time": str(int(time.time() * 1000)),
        "topic": item.topic,
        **item.headers,
    }
    frame = {
        "specVersion": "1.0",
        "type": item.kind,
        "headers": headers,
        "data": json.dumps(item.data, ensure_ascii=False),
    }
    return json.dumps(frame, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class AckFrame:
    message_id: str
    code: int
    message: str
    data: dict[str, Any] | str


class BadAck(ValueError):
    """A text frame from the client that is not a well-formed ack."""


def parse_ack(raw: str) -> AckFrame:
    try:
        ack = json.loads(raw)
    except ValueError:
        raise BadAck(f"ack is not JSON: {raw[:200]!r}") from None
    if not isinstance(ack, dict):
        raise BadAck(f"ack is not a JSON object: {raw[:200]!r}")
    code, headers = ack.get("code"), ack.get("headers")
    message_id = headers.get("messageId") if isinstance(headers, dict) else None
    if type(code) is not int:
        raise BadAck(f"ack without an integer code: {raw[:200]!r}")
    if not isinstance(message_id, str) or not message_id:
        raise BadAck(f"ack without headers.messageId: {raw[:200]!r}")
    message, data = ack.get("message", ""), ack.get("data", "")
    if not isinstance(message, str):
        raise BadAck(f"ack message is not a string: {raw[:200]!r}")
    if not isinstance(data, str):
        raise BadAck(f"ack data must be a JSON string, got {type(data).__name__}: {raw[:200]!r}")
    return AckFrame(message_id, code, message, _decoded(data))


def _decoded(data: str) -> dict[str, Any] | str:
    try:
        value = json.loads(data)
    except ValueError:
        return data
    return value if isinstance(value, dict) else data
