"""How the operator's views put records into words: table cells, JSON and timestamps, shared
by the CLI's tables and the console's pages.

Message text — what users wrote and what the bot answered — is never shown, only its length:
an operator debugging a delivery needs ids, states and errors, not the conversation. Names,
ids, errors and file names come from strangers and from the model, so ``table`` and ``clip``
escape every control character (``\\x1b``); the JSON forms keep every value exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from bot.messages import (
    ConversationKey,
    Delivery,
    MessageRemoval,
    OutboundFile,
    OutboundText,
    TextEdit,
)
from bot.records import (
    AuditEntry,
    Conversation,
    DeliveryAttempt,
    OutboxRow,
    PairingRequest,
    Replica,
    UserAccess,
    UserStatus,
)
from bot.text.escape import escape_controls

NONE = "-"

JsonObject = dict[str, object]


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "") -> str:
    """Columns padded to their widest cell; the last column is not padded. Cells are escaped."""
    rows = [[escape_controls(cell) for cell in row] for row in rows]
    widths = [len(header) for header in headers]
    for row in rows:
        widths = [max(width, len(cell)) for width, cell in zip(widths, row, strict=True)]
    lines = []
    for cells in (headers, *rows):
        padded = [cell.ljust(width) for cell, width in zip(cells, widths, strict=True)]
        lines.append(indent + "  ".join(padded).rstrip())
    return "\n".join(lines)


def when(at: datetime | None, *, millis: bool = False) -> str:
    """A UTC timestamp to the second (or millisecond), for tables."""
    if at is None:
        return NONE
    shown = at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    return shown[:-3] if millis else shown[:-7]


def iso(at: datetime | None) -> str | None:
    return None if at is None else at.astimezone(UTC).isoformat()


def clip(text: str | None, width: int = 60) -> str:
    """One line of at most ``width`` characters."""
    if not text:
        return NONE
    line = escape_controls(" ".join(text.split()))
    return line if len(line) <= width else line[: width - 1] + "…"


def describe_delivery(delivery: Delivery) -> str:
    """What an outbox row does, without its text: ``text final (42 chars)``."""
    if isinstance(delivery, OutboundText):
        return f"text {delivery.kind} ({len(delivery.text)} chars)"
    if isinstance(delivery, TextEdit):
        return f"edit {delivery.kind} of {delivery.message_id} ({len(delivery.text)} chars)"
    if isinstance(delivery, OutboundFile):
        kind = "image" if delivery.is_image else "file"
        return f"{kind} {delivery.name} ({delivery.size} bytes)"
    if isinstance(delivery, MessageRemoval):
        return f"removal of {delivery.message_id}"
    return f"reaction {delivery.reaction} on {delivery.message_id}"


def key_json(key: ConversationKey | None) -> JsonObject | None:
    if key is None:
        return None
    return {
        "channel": key.channel,
        "account_id": key.account_id,
        "chat_id": key.chat_id,
        "topic_id": key.topic_id,
        "user_id": key.user_id,
    }


# --------------------------------------------------------------------------- conversations

CONVERSATION_HEADERS = ("CHANNEL", "CHAT", "TOPIC", "USER", "THREAD", "UPDATED")


def conversation_cells(conversation: Conversation) -> list[str]:
    key = conversation.key
    return [
        key.channel if not key.account_id else f"{key.channel}/{key.account_id}",
        key.chat_id,
        key.topic_id or NONE,
        key.user_id or NONE,
        conversation.thread_id,
        when(conversation.updated_at),
    ]


def conversation_json(conversation: Conversation) -> JsonObject:
    return {
        "key": key_json(conversation.key),
        "thread_id": conversation.thread_id,
        "created_at": iso(conversation.created_at),
        "updated_at": iso(conversation.updated_at),
    }


# --------------------------------------------------------------------------- outbox

OUTBOX_HEADERS = (
    "ID",
    "STATE",
    "ATTEMPTS",
    "CHANNEL",
    "CHAT",
    "WHAT",
    "CORRELATION",
    "UPDATED",
    "LAST ERROR",
)


def outbox_cells(row: OutboxRow) -> list[str]:
    destination = row.item.delivery.destination
    return [
        str(row.id),
        row.state,
        str(row.attempts),
        destination.channel,
        destination.chat_id,
        describe_delivery(row.item.delivery),
        row.item.correlation_id,
        when(row.updated_at),
        clip(row.last_error, 50),
    ]


def outbox_json(row: OutboxRow, attempts: Sequence[DeliveryAttempt] | None = None) -> JsonObject:
    destination = row.item.delivery.destination
    found: JsonObject = {
        "id": row.id,
        "state": row.state,
        "what": describe_delivery(row.item.delivery),
        "channel": destination.channel,
        "account_id": destination.account_id,
        "chat_id": destination.chat_id,
        "topic_id": destination.topic_id,
        "idempotency_key": row.item.idempotency_key,
        "correlation_id": row.item.correlation_id,
        "thread_id": row.item.thread_id,
        "attempts": row.attempts,
        "next_attempt_at": iso(row.next_attempt_at),
        "last_error": row.last_error,
        "sent_message_ids": list(row.sent_message_ids),
        "created_at": iso(row.created_at),
        "updated_at": iso(row.updated_at),
    }
    if attempts is not None:
        found["calls"] = [attempt_json(attempt) for attempt in attempts]
    return found


def attempt_json(attempt: DeliveryAttempt) -> JsonObject:
    return {"at": iso(attempt.at), "outcome": attempt.outcome, "detail": attempt.detail}


# --------------------------------------------------------------------------- pairing

PAIRING_HEADERS = ("CODE", "CHANNEL", "USER", "NAME", "CHAT", "REQUESTED", "EXPIRES")


def pairing_cells(request: PairingRequest) -> list[str]:
    return [
        request.code,
        request.channel,
        request.user_id,
        request.display_name or NONE,
        request.chat_id,
        when(request.created_at),
        when(request.expires_at),
    ]


def pairing_json(request: PairingRequest) -> JsonObject:
    return {
        "code": request.code,
        "channel": request.channel,
        "user_id": request.user_id,
        "display_name": request.display_name,
        "chat_id": request.chat_id,
        "created_at": iso(request.created_at),
        "expires_at": iso(request.expires_at),
    }


def approved(request: PairingRequest) -> str:
    """What approving a pairing did: ``approved Eve (telegram:42)``."""
    who = request.display_name or request.user_id
    return f"approved {who} ({request.channel}:{request.user_id})"


USER_HEADERS = ("CHANNEL", "USER", "STATUS", "BY", "CHANGED")


def status_change(status: UserStatus) -> str:
    """What allowing or blocking a user did, after their name."""
    return "may now talk to the bot" if status is UserStatus.APPROVED else "is now blocked"


def user_cells(user: UserAccess) -> list[str]:
    return [user.channel, user.user_id, user.status, user.changed_by, when(user.changed_at)]


def user_json(user: UserAccess) -> JsonObject:
    return {
        "channel": user.channel,
        "user_id": user.user_id,
        "status": user.status.value,
        "changed_by": user.changed_by,
        "changed_at": iso(user.changed_at),
    }


AUDIT_HEADERS = ("AT", "ACTOR", "ACTION", "DETAIL")


def audit_cells(entry: AuditEntry) -> list[str]:
    return [when(entry.at), entry.actor, entry.action, entry.detail or NONE]


def audit_json(entry: AuditEntry) -> JsonObject:
    return {
        "at": iso(entry.at),
        "actor": entry.actor,
        "action": entry.action,
        "detail": entry.detail,
    }


REPLICA_HEADERS = ("REPLICA", "HOST", "PID", "VERSION", "STARTED", "HEARTBEAT", "CHATS")


def replica_cells(replica: Replica, chats: int) -> list[str]:
    """``chats``: how many chats the replica holds (each is served by one replica)."""
    return [
        replica.id,
        replica.host,
        str(replica.pid),
        replica.version,
        when(replica.started_at),
        when(replica.heartbeat_at),
        str(chats),
    ]


def replica_json(replica: Replica, chats: int) -> JsonObject:
    return {
        "chats_held": chats,
        "id": replica.id,
        "host": replica.host,
        "pid": replica.pid,
        "version": replica.version,
        "backend": replica.backend,
        "started_at": iso(replica.started_at),
        "heartbeat_at": iso(replica.heartbeat_at),
    }
