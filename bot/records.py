"""Frozen rows the Store port returns and accepts (design §11).

They live in the kernel so the pipeline and the store agree on them without the kernel
importing the store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from bot.messages import ChatType, ConversationKey, Delivery, InboundMessage


class InboundStatus(StrEnum):
    """Where an accepted inbound message is. ``accepted`` and ``running`` are unfinished."""

    ACCEPTED = "accepted"
    RUNNING = "running"
    DROPPED = "dropped"
    HANDLED = "handled"
    FAILED = "failed"


UNFINISHED_INBOUND = (InboundStatus.ACCEPTED, InboundStatus.RUNNING)


@dataclass(frozen=True, slots=True, kw_only=True)
class JournalEntry:
    id: int
    message: InboundMessage
    correlation_id: str
    status: InboundStatus
    reason: str | None
    key: ConversationKey | None
    thread_id: str | None
    recorded_at: datetime
    updated_at: datetime
    duplicates: int = 0
    """Redeliveries of this message that were dropped as ``duplicate`` (for ``trace``)."""
    last_duplicate_at: datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Conversation:
    key: ConversationKey
    thread_id: str
    created_at: datetime
    updated_at: datetime
    ended_at: datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageLink:
    """A message the bot sent, and the conversation and thread it belongs to."""

    key: ConversationKey
    thread_id: str


class OutboxState(StrEnum):
    PENDING = "pending"
    SENT = "sent"
    DEAD = "dead"


@dataclass(frozen=True, slots=True, kw_only=True)
class OutboxItem:
    """A delivery to record before it is attempted (design §8).

    ``idempotency_key`` makes enqueueing the same operation twice (say, after a crash
    between recording and marking a turn done) a no-op. ``key`` and ``thread_id`` let every
    message it produces be linked back to its conversation.
    """

    idempotency_key: str
    delivery: Delivery
    key: ConversationKey
    thread_id: str | None
    correlation_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class OutboxRow:
    id: int
    item: OutboxItem
    state: OutboxState
    attempts: int
    next_attempt_at: datetime
    last_error: str | None
    sent_message_ids: tuple[str, ...]
    created_at: datetime
    updated_at: datetime


ATTEMPT_SENT = "sent"
"""``DeliveryAttempt.outcome`` of a platform call that succeeded."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DeliveryAttempt:
    """One platform call made for an outbox row, and its result (append-only; for ``trace``).

    ``outcome`` is ``ATTEMPT_SENT`` or the ``bot.errors.SendErrorKind`` value of the failure;
    ``detail`` holds the sent message ids or the error message.
    """

    row_id: int
    at: datetime
    outcome: str
    detail: str


class ClarificationState(StrEnum):
    PENDING = "pending"
    ANSWERED = "answered"
    EXPIRED = "expired"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True, kw_only=True)
class Clarification:
    """A question the agent asked, waiting for its answer (design §7)."""

    id: str
    key: ConversationKey
    chat_type: ChatType
    thread_id: str
    asked_user_id: str
    question: str
    options: tuple[str, ...]
    question_message_id: str | None
    created_at: datetime
    expires_at: datetime
    state: ClarificationState = ClarificationState.PENDING
    answer: str | None = None


class UserStatus(StrEnum):
    APPROVED = "approved"
    DENIED = "denied"


@dataclass(frozen=True, slots=True, kw_only=True)
class UserAccess:
    channel: str
    user_id: str
    status: UserStatus
    changed_by: str
    changed_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class PairingRequest:
    channel: str
    user_id: str
    display_name: str
    chat_id: str
    code: str
    created_at: datetime
    expires_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditEntry:
    at: datetime
    actor: str
    action: str
    detail: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Replica:
    """A daemon process on the store (design §11): who it is and when it last said so.

    ``id`` is stable for the process (``<hostname>-<pid>-<random>``, or ``daemon.replica_id``);
    a replica is live while ``heartbeat_at`` is younger than ``daemon.replica_expiry_s``.
    ``backend`` is the store it runs on (``sqlite`` / ``postgres``).
    """

    id: str
    host: str
    pid: int
    version: str
    backend: str
    started_at: datetime
    heartbeat_at: datetime


@dataclass(frozen=True, slots=True)
class ChatRef:
    """One platform chat: the unit a replica holds a lease on (design §11 "replicas").

    Everything of a chat (routing its messages, its conversations' lanes, its outbox order)
    is done by the replica holding it, because routing decisions in one chat depend on each
    other: a reply to any bot message, a question answered by the next message, a new topic.
    """

    channel: str
    account_id: str
    chat_id: str

    @classmethod
    def of(cls, message: InboundMessage) -> ChatRef:
        return cls(message.channel, message.account_id, message.chat_id)


@dataclass(frozen=True, slots=True, kw_only=True)
class AdoptedEntry:
    """An unfinished journal entry a replica took into its hands.

    ``previous_owner`` is the replica that had it before (one that died or stopped, or this
    replica's own id from an earlier life): crash recovery applies. ``None``: nobody had
    taken it yet (journaled by another replica for a chat this one holds).
    """

    entry: JournalEntry
    previous_owner: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Adoption:
    """What ``LeaseStore.adopt`` did: which chats this replica holds now, which another live
    replica holds, and the entries it took over, oldest first."""

    held: frozenset[ChatRef]
    claimed: frozenset[ChatRef]
    """Of ``held``, the chats this call took (free, or from a replica that is not live)."""
    others: dict[ChatRef, str]
    """Chats another live replica holds, with its id: their messages are that replica's."""
    entries: tuple[AdoptedEntry, ...]
    tokens: dict[ChatRef, int] = field(default_factory=dict)
    """Each held chat's fencing token (``LeaseFence``); empty where chats are not leased."""


@dataclass(frozen=True, slots=True)
class LeaseFence:
    """A replica's grant of one chat: the writes it makes for the chat hold only while the
    chat's lease still names this owner with this token (a later grant has a larger one)."""

    replica: str
    chat: ChatRef
    token: int
