"""How values are spelled in the database: datetimes, JSON messages and deliveries.

In SQLite datetimes are ISO-8601 UTC text with a fixed shape (always microseconds, always
``+00:00``), so SQL text comparison orders them by time; PostgreSQL stores them as
``timestamptz`` (``to_utc``), which keeps the same microseconds. Messages and deliveries go
through pydantic ``TypeAdapter`` over the kernel dataclasses; the outbox stores an ``op``
beside each payload so decoding never has to guess which dataclass it holds.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Final

from pydantic import TypeAdapter, ValidationError

from bot.errors import StoreError
from bot.messages import (
    Delivery,
    InboundMessage,
    MessageRemoval,
    OutboundFile,
    OutboundText,
    ReactionMark,
    TextEdit,
)

_INBOUND: Final = TypeAdapter(InboundMessage)
_TEXT: Final = TypeAdapter(OutboundText)
_EDIT: Final = TypeAdapter(TextEdit)
_FILE: Final = TypeAdapter(OutboundFile)
_REACTION: Final = TypeAdapter(ReactionMark)
_REMOVAL: Final = TypeAdapter(MessageRemoval)

OP_TEXT: Final = "text"
OP_EDIT: Final = "edit"
OP_FILE: Final = "file"
OP_REACTION: Final = "reaction"
OP_REMOVAL: Final = "removal"


def to_utc(at: datetime) -> datetime:
    """A timezone-aware datetime in UTC; naive ones are a programming error (a store could
    only guess their zone: PostgreSQL would take its session's)."""
    if at.tzinfo is not UTC:
        if at.tzinfo is None or at.utcoffset() is None:
            raise ValueError(f"naive datetime {at!r}; the store needs timezone-aware values")
        at = at.astimezone(UTC)
    return at


def to_db_time(at: datetime) -> str:
    """The stored (SQLite) form of a timezone-aware datetime."""
    return to_utc(at).isoformat(timespec="microseconds")


def from_db_time(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def encode_inbound(message: InboundMessage) -> str:
    return _INBOUND.dump_json(message).decode()


def decode_inbound(payload: str) -> InboundMessage:
    try:
        message = _INBOUND.validate_json(payload)
    except ValidationError as exc:
        raise StoreError(f"unreadable journaled message: {exc}") from exc
    return dataclasses.replace(message, received_at=message.received_at.astimezone(UTC))


def encode_delivery(delivery: Delivery) -> tuple[str, str]:
    """``(op, payload)`` for an outbox row."""
    match delivery:
        case OutboundText():
            return OP_TEXT, _TEXT.dump_json(delivery).decode()
        case TextEdit():
            return OP_EDIT, _EDIT.dump_json(delivery).decode()
        case OutboundFile():
            return OP_FILE, _FILE.dump_json(delivery).decode()
        case ReactionMark():
            return OP_REACTION, _REACTION.dump_json(delivery).decode()
        case MessageRemoval():
            return OP_REMOVAL, _REMOVAL.dump_json(delivery).decode()


def decode_delivery(op: str, payload: str) -> Delivery:
    try:
        match op:
            case "text":
                return _TEXT.validate_json(payload)
            case "edit":
                return _EDIT.validate_json(payload)
            case "file":
                return _FILE.validate_json(payload)
            case "reaction":
                return _REACTION.validate_json(payload)
            case "removal":
                return _REMOVAL.validate_json(payload)
    except ValidationError as exc:
        raise StoreError(f"unreadable outbox {op!r} payload: {exc}") from exc
    raise StoreError(f"unknown outbox operation {op!r}")


def encode_list(values: Sequence[str] | Sequence[int]) -> str:
    """A list of strings or ids as SQLite keeps it: JSON text."""
    return json.dumps(list(values), ensure_ascii=False)


def decode_strings(payload: str) -> tuple[str, ...]:
    values = json.loads(payload)
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise StoreError(f"expected a JSON list of strings, got {payload!r}")
    return tuple(values)
