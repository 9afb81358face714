"""The Store port: durable state, as one protocol per table group (design §11)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from bot.messages import (
    ConversationKey,
    InboundMessage,
)
from bot.ports.leases import LeaseStore
from bot.records import (
    AuditEntry,
    Clarification,
    Conversation,
    DeliveryAttempt,
    InboundStatus,
    JournalEntry,
    LeaseFence,
    MessageLink,
    OutboxItem,
    OutboxRow,
    OutboxState,
    PairingRequest,
    Replica,
    UserAccess,
    UserStatus,
)


class InboundJournal(Protocol):
    async def record_many(self, entries: Sequence[tuple[InboundMessage, str]]) -> list[int | None]:
        """Journal each (message, correlation id) in one write: its new entry id, or ``None``
        when it was seen before (a redelivery); a message repeated within the batch is
        recorded once, the first time."""
        ...

    async def update(
        self,
        entry_id: int,
        status: InboundStatus,
        *,
        reason: str | None = None,
        key: ConversationKey | None = None,
        thread_id: str | None = None,
    ) -> None: ...

    async def find(self, channel: str | None, message_id: str) -> list[JournalEntry]:
        """Entries of a platform message id (in any chat); of any channel when ``None``."""
        ...

    async def find_correlation(self, correlation_id: str) -> list[JournalEntry]:
        """Entries journaled with this correlation id, oldest first: the ``ref`` a failed
        turn's reply shows (its last message's), or a ``run_agent`` push's delivery id."""
        ...

    async def unfinished(self) -> list[JournalEntry]: ...

    async def count_duplicate(self, message: InboundMessage) -> None:
        """Remember that a redelivery of a journaled message arrived (for ``trace``)."""
        ...

    async def prune(self, before: datetime) -> int: ...


class ConversationStore(Protocol):
    async def active(self, key: ConversationKey) -> Conversation | None: ...

    async def bind(self, key: ConversationKey, thread_id: str) -> Conversation:
        """Make ``thread_id`` the key's thread unless it has one; return the active one."""
        ...

    async def rotate(self, key: ConversationKey, thread_id: str) -> Conversation:
        """End the key's current thread (kept for history) and start ``thread_id``."""
        ...

    async def current(self, key: ConversationKey) -> Conversation | None:
        """The key's active conversation (``None``: none), for the hot path: may come from
        memory. A turn marks its conversation used through the journal's running mark."""
        ...

    async def topic_known(self, key: ConversationKey) -> bool:
        """Whether the bot has ever taken part in this conversation (any thread)."""
        ...

    async def recent(
        self, *, channel: str | None = None, limit: int = 50
    ) -> list[Conversation]: ...

    async def count(self) -> int: ...


class LinkStore(Protocol):
    """Which conversation a sent message belongs to; written by ``OutboxStore.mark_sent``."""

    async def lookup(
        self, channel: str, account_id: str, chat_id: str, message_id: str
    ) -> MessageLink | None: ...


class OutboxStore(Protocol):
    async def enqueue_rows(
        self,
        items: Sequence[OutboxItem],
        *,
        finishes: Sequence[int] = (),
        fence: LeaseFence | None = None,
    ) -> list[OutboxRow]:
        """Record deliveries, returning each item's row as it now stands (sent, if it was); an
        item whose idempotency key exists keeps its old row.

        ``finishes``: inbound journal entries these deliveries answer, marked handled in the
        same write (a reply is never recorded without its messages being finished).
        ``fence``: write only while the chat's lease still names that owner and token, checked
        in the same statement (where chats are leased); else ``ChatLost`` and nothing written.
        """
        ...

    async def due(
        self, now: datetime, limit: int = 100, *, holder: str | None = None
    ) -> list[OutboxRow]:
        """Pending rows whose time has come, oldest first; with ``holder``, only of chats that
        replica holds (``LeaseStore``; on a store that is not shared every chat is its one
        daemon's)."""
        ...

    async def next_due_at(self, *, holder: str | None = None) -> datetime | None: ...

    async def get(self, row_id: int) -> OutboxRow | None: ...

    async def mark_sent(self, row_id: int, message_ids: tuple[str, ...]) -> None:
        """Mark the row sent, record the successful platform call (see ``attempts``), and
        link each sent message to the row's conversation and thread (design §4) unless the row
        has no thread or is a reaction."""
        ...

    async def mark_retry(
        self, row_id: int, error: str, next_attempt_at: datetime, *, counts: bool = True
    ) -> None:
        """Schedule the row's next attempt; ``counts=False`` when the platform only asked to
        wait (a rate limit) or the channel was not up: no attempt of ``max_attempts`` spent."""
        ...

    async def mark_dead(self, row_id: int, error: str) -> None: ...

    async def record_attempt(self, row_id: int, outcome: str, detail: str) -> None:
        """Append one platform call's result to the row's history (``DeliveryAttempt``)."""
        ...

    async def attempts(self, row_id: int) -> list[DeliveryAttempt]:
        """The row's platform calls, oldest first."""
        ...

    async def listing(
        self, state: OutboxState | None = None, limit: int = 100
    ) -> list[OutboxRow]: ...

    async def for_correlation(self, correlation_id: str) -> list[OutboxRow]: ...

    async def revive(self, row_ids: Sequence[int] | None = None) -> int:
        """Move dead rows (all, or the given ones) back to pending."""
        ...

    async def purge(self, state: OutboxState) -> int: ...

    async def counts(self) -> dict[OutboxState, int]: ...


class ClarificationStore(Protocol):
    async def add(self, clarification: Clarification) -> None: ...

    async def set_question_message(self, clarification_id: str, message_id: str) -> None: ...

    async def get(self, clarification_id: str) -> Clarification | None: ...

    async def pending_for_user(
        self, channel: str, account_id: str, chat_id: str, user_id: str, now: datetime
    ) -> list[Clarification]:
        """Unexpired pending questions asked of this user in this chat, oldest first."""
        ...

    async def pending_for_key(self, key: ConversationKey) -> list[Clarification]: ...

    async def by_question_message(
        self, channel: str, account_id: str, chat_id: str, message_id: str
    ) -> Clarification | None: ...

    async def resolve(self, clarification_id: str, answer: str) -> bool:
        """Mark answered; ``False`` if it was no longer pending (answered twice, expired)."""
        ...

    async def cancel_for_key(self, key: ConversationKey) -> int: ...

    async def cancel(self, clarification_id: str) -> bool:
        """Pending -> cancelled (a question the platform refused to show); ``False`` if it
        was no longer pending."""
        ...

    async def expire_due(self, now: datetime) -> list[Clarification]: ...


class AccessStore(Protocol):
    async def status(self, channel: str, user_id: str) -> UserStatus | None: ...

    async def set_status(self, channel: str, user_id: str, status: UserStatus, by: str) -> None: ...

    async def users(self, channel: str | None = None) -> list[UserAccess]: ...

    async def pairing_for_user(
        self, channel: str, user_id: str, now: datetime
    ) -> PairingRequest | None: ...

    async def add_pairing(self, request: PairingRequest) -> None: ...

    async def pending_pairings(
        self, now: datetime, channel: str | None = None
    ) -> list[PairingRequest]: ...

    async def take_pairing(self, code: str, now: datetime) -> PairingRequest | None:
        """Remove and return an unexpired request by code (one-time use)."""
        ...

    async def drop_pairing(self, code: str) -> bool: ...


class AuditLog(Protocol):
    async def record(self, actor: str, action: str, detail: str) -> None: ...

    async def recent(self, limit: int = 50) -> list[AuditEntry]: ...


class SettingsStore(Protocol):
    async def get(self, name: str) -> str | None: ...

    async def set(self, name: str, value: str | None) -> None: ...


class ReplicaStore(Protocol):
    """The daemons running on this store, each heartbeating its row (design §11)."""

    async def register(self, replica: Replica) -> None:
        """Record the replica (replacing a row of the same id), as of its ``heartbeat_at``."""
        ...

    async def heartbeat(self, replica_id: str, at: datetime) -> bool:
        """Move the replica's ``heartbeat_at`` to ``at``; ``False`` when it has no row (it was
        deregistered or pruned meanwhile: register it again)."""
        ...

    async def deregister(self, replica_id: str) -> None: ...

    async def live(self, now: datetime, expiry_s: float) -> list[Replica]:
        """Replicas whose heartbeat is younger than ``expiry_s`` at ``now``, oldest first."""
        ...

    async def prune(self, before: datetime) -> int:
        """Remove replicas whose last heartbeat is older than ``before`` (killed ones)."""
        ...


class Store(Protocol):
    """Durable state; one writer connection, no blocking I/O on the loop (design §11)."""

    @property
    def inbound(self) -> InboundJournal: ...

    @property
    def conversations(self) -> ConversationStore: ...

    @property
    def links(self) -> LinkStore: ...

    @property
    def outbox(self) -> OutboxStore: ...

    @property
    def clarifications(self) -> ClarificationStore: ...

    @property
    def access(self) -> AccessStore: ...

    @property
    def audit(self) -> AuditLog: ...

    @property
    def settings(self) -> SettingsStore: ...

    @property
    def replicas(self) -> ReplicaStore: ...

    @property
    def leases(self) -> LeaseStore: ...

    async def open(self) -> None:
        """Open (creating and migrating as needed): what the daemon does."""
        ...

    async def open_existing(self) -> None:
        """Open a store the daemon made, beside a running daemon (the operator CLI).

        Never creates the store and never migrates it; raises ``StoreError`` saying why when
        there is no store or its schema is not the one this build expects.
        """
        ...

    async def aclose(self) -> None: ...

    async def writable(self) -> bool: ...
