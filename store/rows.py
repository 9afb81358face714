"""Typed reads out of a row, the column form of a ConversationKey, and rows → records.

A key is five columns (channel, account_id, chat_id, topic_id, user_id), never one joined
string. SQLite treats NULLs as distinct in UNIQUE indexes, so an absent topic or user is stored
as ``''`` and read back as ``None``; no platform uses an empty string as an id. PostgreSQL
stores keys the same way, so both backends share one reading of every table.

``Columns`` reads SQLite's spelling (times and string lists as text); the PostgreSQL store
reads its native types through a subclass. The record builders below take either, so a row
becomes the same ``JournalEntry`` (``OutboxRow``, ...) whichever backend it came from.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Final, Protocol

from bot.errors import StoreError
from bot.messages import ChatType, ConversationKey, InboundMessage
from bot.records import (
    AuditEntry,
    Clarification,
    ClarificationState,
    Conversation,
    DeliveryAttempt,
    InboundStatus,
    JournalEntry,
    MessageLink,
    OutboxItem,
    OutboxRow,
    OutboxState,
    PairingRequest,
    Replica,
    UserAccess,
    UserStatus,
)
from store.codec import decode_delivery, decode_inbound, decode_strings, from_db_time

KeyValues = tuple[str, str, str, str, str]
KEY_MATCH: Final = "channel = ? AND account_id = ? AND chat_id = ? AND topic_id = ? AND user_id = ?"
"""The WHERE clause of a conversation key's row, with ``key_values`` as its parameters."""


class Row(Protocol):
    """A result row whose columns are looked up by name (``sqlite3.Row``, a psycopg dict row)."""

    def __getitem__(self, name: str, /) -> object: ...


def key_values(key: ConversationKey) -> KeyValues:
    return (key.channel, key.account_id, key.chat_id, key.topic_id or "", key.user_id or "")


class Columns:
    """Reads one row's columns as the types the schema promises, or fails loudly."""

    __slots__ = ("_row",)

    def __init__(self, row: Row) -> None:
        self._row = row

    def value(self, name: str) -> object:
        return self._row[name]

    def is_null(self, name: str) -> bool:
        return self.value(name) is None

    def text(self, name: str) -> str:
        value = self.value(name)
        if not isinstance(value, str):
            raise StoreError(f"column {name} holds {value!r}, expected text")
        return value

    def opt_text(self, name: str) -> str | None:
        return None if self.is_null(name) else self.text(name)

    def integer(self, name: str) -> int:
        value = self.value(name)
        if not isinstance(value, int):
            raise StoreError(f"column {name} holds {value!r}, expected an integer")
        return value

    def at(self, name: str) -> datetime:
        return from_db_time(self.text(name))

    def opt_at(self, name: str) -> datetime | None:
        return None if self.is_null(name) else self.at(name)

    def strings(self, name: str) -> tuple[str, ...]:
        """A list of strings (a JSON array in SQLite)."""
        return decode_strings(self.text(name))

    def key(self, prefix: str = "") -> ConversationKey:
        return ConversationKey(
            channel=self.text(f"{prefix}channel"),
            account_id=self.text(f"{prefix}account_id"),
            chat_id=self.text(f"{prefix}chat_id"),
            topic_id=self.text(f"{prefix}topic_id") or None,
            user_id=self.text(f"{prefix}user_id") or None,
        )

    def opt_key(self, prefix: str) -> ConversationKey | None:
        return None if self.is_null(f"{prefix}channel") else self.key(prefix)


# --------------------------------------------------------------------------- records


def journal_entry(cols: Columns) -> JournalEntry:
    return JournalEntry(
        id=cols.integer("id"),
        message=decode_inbound(cols.text("message")),
        correlation_id=cols.text("correlation_id"),
        status=InboundStatus(cols.text("status")),
        reason=cols.opt_text("reason"),
        key=cols.opt_key("key_"),
        thread_id=cols.opt_text("thread_id"),
        recorded_at=cols.at("recorded_at"),
        updated_at=cols.at("updated_at"),
        duplicates=cols.integer("duplicates"),
        last_duplicate_at=cols.opt_at("last_duplicate_at"),
    )


def journaled_ids(
    entries: Sequence[tuple[InboundMessage, str]], inserted: Iterable[Columns]
) -> list[int | None]:
    """Each entry's new id, from the rows an ``INSERT ... ON CONFLICT DO NOTHING RETURNING``
    wrote (in no promised order, named by their dedupe key); ``None`` for an entry that was
    there already or came earlier in the batch."""
    ids = {
        (
            cols.text("channel"),
            cols.text("account_id"),
            cols.text("chat_id"),
            cols.text("message_id"),
        ): cols.integer("id")
        for cols in inserted
    }
    return [ids.pop((m.channel, m.account_id, m.chat_id, m.message_id), None) for m, _ in entries]


def conversation(cols: Columns) -> Conversation:
    return Conversation(
        key=cols.key(),
        thread_id=cols.text("thread_id"),
        created_at=cols.at("created_at"),
        updated_at=cols.at("updated_at"),
        ended_at=cols.opt_at("ended_at"),
    )


def message_link(cols: Columns) -> MessageLink:
    return MessageLink(key=cols.key("key_"), thread_id=cols.text("thread_id"))


def outbox_row(cols: Columns) -> OutboxRow:
    item = OutboxItem(
        idempotency_key=cols.text("idempotency_key"),
        delivery=decode_delivery(cols.text("op"), cols.text("payload")),
        key=cols.key(),
        thread_id=cols.opt_text("thread_id"),
        correlation_id=cols.text("correlation_id"),
    )
    return OutboxRow(
        id=cols.integer("id"),
        item=item,
        state=OutboxState(cols.text("state")),
        attempts=cols.integer("attempts"),
        next_attempt_at=cols.at("next_attempt_at"),
        last_error=cols.opt_text("last_error"),
        sent_message_ids=cols.strings("sent_message_ids"),
        created_at=cols.at("created_at"),
        updated_at=cols.at("updated_at"),
    )


def new_outbox_row(row_id: int, item: OutboxItem, now: datetime) -> OutboxRow:
    """The row an item was just enqueued as (built from what was written, not read back)."""
    return OutboxRow(
        id=row_id,
        item=item,
        state=OutboxState.PENDING,
        attempts=0,
        next_attempt_at=now,
        last_error=None,
        sent_message_ids=(),
        created_at=now,
        updated_at=now,
    )


def outbox_counts(rows: Iterable[Columns]) -> dict[OutboxState, int]:
    """Rows per state from ``(state, n)`` rows; every state is present, 0 when it has none."""
    counts = dict.fromkeys(OutboxState, 0)
    for cols in rows:
        counts[OutboxState(cols.text("state"))] = cols.integer("n")
    return counts


def delivery_attempt(cols: Columns) -> DeliveryAttempt:
    return DeliveryAttempt(
        row_id=cols.integer("outbox_id"),
        at=cols.at("at"),
        outcome=cols.text("outcome"),
        detail=cols.text("detail"),
    )


def clarification(cols: Columns) -> Clarification:
    return Clarification(
        id=cols.text("id"),
        key=cols.key(),
        chat_type=ChatType(cols.text("chat_type")),
        thread_id=cols.text("thread_id"),
        asked_user_id=cols.text("asked_user_id"),
        question=cols.text("question"),
        options=cols.strings("options"),
        question_message_id=cols.opt_text("question_message_id"),
        created_at=cols.at("created_at"),
        expires_at=cols.at("expires_at"),
        state=ClarificationState(cols.text("state")),
        answer=cols.opt_text("answer"),
    )


def user_access(cols: Columns) -> UserAccess:
    return UserAccess(
        channel=cols.text("channel"),
        user_id=cols.text("user_id"),
        status=UserStatus(cols.text("status")),
        changed_by=cols.text("changed_by"),
        changed_at=cols.at("changed_at"),
    )


def pairing_request(cols: Columns) -> PairingRequest:
    return PairingRequest(
        channel=cols.text("channel"),
        user_id=cols.text("user_id"),
        display_name=cols.text("display_name"),
        chat_id=cols.text("chat_id"),
        code=cols.text("code"),
        created_at=cols.at("created_at"),
        expires_at=cols.at("expires_at"),
    )


def audit_entry(cols: Columns) -> AuditEntry:
    return AuditEntry(
        at=cols.at("at"),
        actor=cols.text("actor"),
        action=cols.text("action"),
        detail=cols.text("detail"),
    )


def replica(cols: Columns) -> Replica:
    return Replica(
        id=cols.text("id"),
        host=cols.text("host"),
        pid=cols.integer("pid"),
        version=cols.text("version"),
        backend=cols.text("backend"),
        started_at=cols.at("started_at"),
        heartbeat_at=cols.at("heartbeat_at"),
    )
