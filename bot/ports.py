"""The protocols the edges implement: Channel, AgentBackend and Store (SPEC §1).

The kernel depends only on these; ``bot/registry.py`` loads the configured implementations.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Protocol

from aiohttp import web

from bot.messages import (
    Attachment,
    ConversationKey,
    Destination,
    InboundMessage,
    OutboundFile,
    OutboundText,
    Reaction,
    ReactionMark,
    Sender,
    SentRef,
    TextEdit,
)
from bot.records import (
    AuditEntry,
    Clarification,
    Conversation,
    DeliveryAttempt,
    InboundStatus,
    JournalEntry,
    MessageLink,
    OutboxItem,
    OutboxRow,
    OutboxState,
    PairingRequest,
    UserAccess,
    UserStatus,
)

# --------------------------------------------------------------------------- channels


class Admission(StrEnum):
    """What ``publish`` tells an adapter: ack only on ``accepted`` or ``duplicate``."""

    ACCEPTED = "accepted"
    DUPLICATE = "duplicate"
    QUEUE_FULL = "queue_full"
    CLOSED = "closed"

    @property
    def ack(self) -> bool:
        """Whether the platform event may be acknowledged (it is durably recorded)."""
        return self in (Admission.ACCEPTED, Admission.DUPLICATE)


Publish = Callable[[InboundMessage], Awaitable[Admission]]

WebhookHandler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class WebhookRoutes(Protocol):
    """Where a channel in webhook mode mounts its receiver (the daemon's HTTP server)."""

    def add_post(self, path: str, handler: WebhookHandler) -> None: ...


class ChannelHealth(Protocol):
    """How a running adapter reports its connection (SPEC §12); feeds ``/readyz``."""

    def connected(self) -> None: ...

    def disconnected(self, reason: str) -> None:
        """Lost the connection; the adapter (or its SDK) is reconnecting."""
        ...

    def auth_failed(self, reason: str) -> None:
        """Credentials were refused while running; the channel is parked."""
        ...

    def activity(self) -> None:
        """Anything arrived from the platform (an event, a ping): the link is alive."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ChannelContext:
    """What the daemon gives every adapter besides its settings.

    Adapters are constructed as ``Adapter(settings: bot.config.Settings, context)`` by the
    registry, without I/O; ``start`` connects.
    """

    routes: WebhookRoutes
    state_dir: Path
    health: ChannelHealth


class TextUnit(StrEnum):
    """The unit a platform counts its text limit in."""

    CHARS = "chars"
    UTF16 = "utf16"
    UTF8_BYTES = "utf8_bytes"


@dataclass(frozen=True, slots=True, kw_only=True)
class ChannelCapabilities:
    """What a platform can do; the delivery code adapts to these, never to a platform name."""

    text_limit: int
    text_unit: TextUnit = TextUnit.CHARS
    edits: bool = False
    buttons: bool = False
    threads: bool = False
    reactions: frozenset[Reaction] = frozenset()
    """The reactions this platform shows; the kernel records no others."""
    typing: bool = False
    max_file_bytes: int = 20 * 1024 * 1024
    max_image_bytes: int = 10 * 1024 * 1024
    progress_interval_dm_s: float = 1.0
    progress_interval_group_s: float = 3.0
    per_chat_interval_s: float = 0.0
    global_rate_per_s: float = 0.0
    stale_after_s: float | None = None
    """Reconnect when nothing (not even a ping) arrived for this long; ``None`` disables."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BotIdentity:
    """How the bot is named on its platform; used to strip ``/cmd@botname`` suffixes."""

    user_id: str = ""
    usernames: frozenset[str] = field(default_factory=frozenset)


class Channel(Protocol):
    """One platform adapter (SPEC §14). Sends raise ``bot.errors.SendError`` subclasses."""

    @property
    def name(self) -> str: ...

    @property
    def capabilities(self) -> ChannelCapabilities: ...

    @property
    def identity(self) -> BotIdentity: ...

    async def start(self, publish: Publish) -> None:
        """Connect and begin delivering inbound messages to ``publish``; return once started.

        Raises ``bot.errors.AuthFailed`` for refused credentials and ``ChannelError`` for
        anything else that prevents starting.
        """
        ...

    async def stop_intake(self) -> None:
        """Stop taking new platform events; sending keeps working (graceful drain)."""
        ...

    async def wait_finished(self) -> None:
        """Return when the channel's input ends by itself (console EOF); platform channels
        never finish on their own."""
        ...

    async def aclose(self) -> None: ...

    async def send_text(self, message: OutboundText) -> SentRef: ...

    async def edit_text(self, edit: TextEdit) -> None: ...

    async def send_file(self, file: OutboundFile) -> SentRef: ...

    async def react(self, mark: ReactionMark) -> None: ...

    async def show_typing(self, destination: Destination) -> None: ...

    async def download(self, attachment: Attachment, *, max_bytes: int) -> bytes:
        """Fetch an inbound attachment; raises ``DownloadError`` past ``max_bytes``."""
        ...


# --------------------------------------------------------------------------- agent


@dataclass(frozen=True, slots=True, kw_only=True)
class SavedUpload:
    """An inbound attachment saved into the thread's ``uploads/``."""

    name: str
    path: Path
    mime: str
    size: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    """One unit of work for the agent: user text, or the answer to its pending question."""

    text: str
    sender: Sender
    uploads: tuple[SavedUpload, ...] = ()
    notes: tuple[str, ...] = ()
    resume_answer: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolActivity:
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ClarificationRequest:
    """The agent paused to ask the user; the run ends after this event."""

    question: str
    options: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class PresentedFile:
    path: Path
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class FinalAnswer:
    text: str
    files: tuple[PresentedFile, ...] = ()


AgentEvent = TextDelta | ToolActivity | ClarificationRequest | FinalAnswer


class AgentBackend(Protocol):
    """An agent that keeps history per thread (SPEC §6). Failures raise ``AgentError``.

    Implementations are constructed as ``Backend(settings: bot.config.Settings)`` by the
    registry (no I/O in ``__init__``), then ``start()``-ed. ``run`` yields events and ends
    after a ``FinalAnswer`` or a ``ClarificationRequest``; the next ``run`` with
    ``Turn.resume_answer`` set continues a paused run.
    """

    @property
    def description(self) -> str:
        """One line for startup logs and ``/admin status`` (says so when offline)."""
        ...

    async def start(self) -> None:
        """Open what the backend needs (checkpointer, HTTP client); called once."""
        ...

    async def create_thread(self) -> str: ...

    def run(self, thread_id: str, turn: Turn) -> AsyncGenerator[AgentEvent, None]: ...

    async def cancel(self, thread_id: str) -> None:
        """Stop the thread's run where it executes (a remote server); local runs are
        cancelled by cancelling the task that iterates ``run``."""
        ...

    async def aclose(self) -> None: ...


# --------------------------------------------------------------------------- store


class InboundJournal(Protocol):
    async def record(self, message: InboundMessage, correlation_id: str) -> int | None:
        """Journal a new message; ``None`` when it was seen before (a redelivery)."""
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

    async def get(self, entry_id: int) -> JournalEntry | None: ...

    async def find(self, channel: str | None, message_id: str) -> list[JournalEntry]:
        """Entries of a platform message id (in any chat); of any channel when ``None``."""
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

    async def touch(self, key: ConversationKey) -> Conversation | None:
        """Mark the key's active conversation as used now and return it (``None``: none)."""
        ...

    async def topic_known(self, key: ConversationKey) -> bool:
        """Whether the bot has ever taken part in this conversation (any thread)."""
        ...

    async def recent(
        self, *, channel: str | None = None, limit: int = 50
    ) -> list[Conversation]: ...

    async def count(self) -> int: ...


class LinkStore(Protocol):
    async def add(self, destination: Destination, message_id: str, link: MessageLink) -> None: ...

    async def lookup(
        self, channel: str, account_id: str, chat_id: str, message_id: str
    ) -> MessageLink | None: ...


class OutboxStore(Protocol):
    async def enqueue(self, items: Sequence[OutboxItem]) -> list[int]:
        """Record deliveries; an item whose idempotency key exists keeps its old row."""
        ...

    async def enqueue_rows(self, items: Sequence[OutboxItem]) -> list[OutboxRow]:
        """Like ``enqueue``, returning each item's row as it now stands (sent, if it was)."""
        ...

    async def due(self, now: datetime, limit: int = 100) -> list[OutboxRow]: ...

    async def next_due_at(self) -> datetime | None: ...

    async def get(self, row_id: int) -> OutboxRow | None: ...

    async def mark_sent(self, row_id: int, message_ids: tuple[str, ...]) -> None: ...

    async def mark_retry(self, row_id: int, error: str, next_attempt_at: datetime) -> None: ...

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


class Store(Protocol):
    """Durable state; one writer connection, no blocking I/O on the loop (SPEC §11)."""

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
