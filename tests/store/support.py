"""Builders and a settable clock for the store tests (kept out of ``test_*.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Protocol

from bot.messages import (
    Attachment,
    AttachmentKind,
    ButtonPress,
    ChatType,
    ConversationKey,
    Delivery,
    Destination,
    InboundMessage,
    OutboundKind,
    OutboundText,
    Sender,
)
from bot.ports import Store
from bot.records import JournalEntry, MessageLink, OutboxItem, Replica
from store.postgres import PostgresStore
from store.sqlite import SqliteStore

START = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)

BackendStore = SqliteStore | PostgresStore
"""What the contract suite's ``store`` is: the port, plus what both backends add to it."""


class StoreFactory(Protocol):
    """``make_store``: another (unopened) store on the test's SQLite file or PostgreSQL schema;
    ``listen`` makes a PostgreSQL one LISTEN for other writers' changes (as the daemon's)."""

    def __call__(
        self, *, other_writers_check_s: float = ..., listen: bool = ...
    ) -> BackendStore: ...


class ManualClock:
    """A clock the test moves by hand; the store stamps rows with it."""

    def __init__(self, start: datetime = START) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now


def key(
    chat_id: str = "c1",
    *,
    channel: str = "telegram",
    account_id: str = "",
    topic_id: str | None = None,
    user_id: str | None = None,
) -> ConversationKey:
    return ConversationKey(
        channel=channel, account_id=account_id, chat_id=chat_id, topic_id=topic_id, user_id=user_id
    )


def inbound(
    message_id: str,
    *,
    chat_id: str = "c1",
    channel: str = "telegram",
    account_id: str = "",
    text: str = "hello",
) -> InboundMessage:
    return InboundMessage(
        channel=channel,
        account_id=account_id,
        chat_id=chat_id,
        chat_type=ChatType.GROUP,
        message_id=message_id,
        sender=Sender(id="u1", display_name="Ada"),
        text=text,
        attachments=(
            Attachment(kind=AttachmentKind.IMAGE, name="p.png", mime="image/png", ref="f1"),
        ),
        reply_to_message_id="m0",
        thread_root_id="root",
        mentions_bot=True,
        button=ButtonPress(payload="opt:1", message_id="m0"),
        received_at=START,
    )


def destination(chat_id: str = "c1", topic_id: str | None = None) -> Destination:
    return Destination(
        channel="telegram", chat_id=chat_id, chat_type=ChatType.GROUP, topic_id=topic_id
    )


def text(body: str = "hi") -> OutboundText:
    return OutboundText(destination=destination(), text=body, kind=OutboundKind.FINAL)


def item(
    idempotency_key: str,
    delivery: Delivery | None = None,
    *,
    correlation_id: str = "corr-1",
    conversation: ConversationKey | None = None,
) -> OutboxItem:
    return OutboxItem(
        idempotency_key=idempotency_key,
        delivery=delivery if delivery is not None else text(idempotency_key),
        key=conversation if conversation is not None else key(),
        thread_id="th-1",
        correlation_id=correlation_id,
    )


async def record(store: Store, message: InboundMessage, correlation_id: str) -> int | None:
    """Journal one message the way intake does (a batch of one); ``None`` for a redelivery."""
    (entry_id,) = await store.inbound.record_many([(message, correlation_id)])
    return entry_id


async def journal_entry(
    store: Store, message_id: str, *, channel: str = "telegram", chat_id: str = "c1"
) -> JournalEntry | None:
    """The journal entry of one message in one chat (found the way ``trace`` finds it)."""
    found = [
        e for e in await store.inbound.find(channel, message_id) if e.message.chat_id == chat_id
    ]
    assert len(found) <= 1
    return found[0] if found else None


async def enqueue(store: Store, items: Sequence[OutboxItem]) -> list[int]:
    """Record deliveries the way the outbox does; each item's row id, old or new."""
    return [row.id for row in await store.outbox.enqueue_rows(items)]


async def link_sent(store: Store, target: Destination, message_id: str, link: MessageLink) -> None:
    """Link a sent message to its conversation the way production does: a delivery of that
    conversation is recorded, then marked sent with the platform's message id."""
    delivery = OutboundText(destination=target, text="sent", kind=OutboundKind.FINAL)
    (row,) = await store.outbox.enqueue_rows(
        [
            OutboxItem(
                idempotency_key=f"link:{message_id}:{link.thread_id}",
                delivery=delivery,
                key=link.key,
                thread_id=link.thread_id,
                correlation_id="corr-link",
            )
        ]
    )
    await store.outbox.mark_sent(row.id, (message_id,))


async def register(store: Store, replica_id: str, *, seconds: float = 0) -> None:
    """Register ``replica_id`` as live ``seconds`` after ``START``."""
    at = START + timedelta(seconds=seconds)
    await store.replicas.register(
        Replica(
            id=replica_id, host="h", pid=1, version="0", backend="postgres",
            started_at=at, heartbeat_at=at,
        )
    )  # fmt: skip
