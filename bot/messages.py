"""The frozen values that cross module boundaries (design §3).

Adapters fill these from platform events; the core never reads a platform field. Every
identifier is a string as the platform spells it, so no adapter has to squeeze its ids into
integers and no core code has to guess their shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum


class ChatType(StrEnum):
    """Whether a chat is one-to-one with the bot or shared by several people."""

    DM = "dm"
    GROUP = "group"


class AttachmentKind(StrEnum):
    IMAGE = "image"
    FILE = "file"
    AUDIO = "audio"
    VIDEO = "video"


class OutboundKind(StrEnum):
    """Why a message is sent; it decides rate-limit priority and whether it may be dropped."""

    PROGRESS = "progress"
    FINAL = "final"
    COMMAND = "command"
    NOTICE = "notice"


class Reaction(StrEnum):
    """Platform-neutral reactions; each adapter maps them to its own emoji names."""

    QUEUED = "queued"
    WORKING = "working"
    DONE = "done"
    FAILED = "failed"


class MessageOrigin(StrEnum):
    """Who put a message on the bus: a chat member through an adapter, or the operator through
    the push API or ``switchboard send`` (design §19), whose token already authorised it."""

    PLATFORM = "platform"
    OPERATOR = "operator"


class RenderMode(StrEnum):
    """The delivery fallback ladder of design §8: the platform's rich dialect, then plain text."""

    RICH = "rich"
    PLAIN = "plain"


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConversationKey:
    """The unit of thread mapping, serialisation and locking (design §4).

    ``topic_id`` is set for a platform thread or reply chain in ``topic`` scope, ``user_id``
    for one member's conversation in ``user`` scope. The store keeps each part in its own
    column.
    """

    channel: str
    account_id: str = ""
    chat_id: str
    topic_id: str | None = None
    user_id: str | None = None

    def describe(self) -> str:
        """A readable form for logs and tables; never parsed back."""
        parts = [self.channel, self.chat_id]
        if self.topic_id is not None:
            parts.append(f"topic={self.topic_id}")
        if self.user_id is not None:
            parts.append(f"user={self.user_id}")
        return " ".join(parts)


@dataclass(frozen=True, slots=True, kw_only=True)
class Sender:
    id: str
    display_name: str = ""
    is_bot: bool = False

    @property
    def shown_as(self) -> str:
        """How people see them: the display name, else the id."""
        return self.display_name or self.id


@dataclass(frozen=True, slots=True, kw_only=True)
class Attachment:
    """A file that came with a message. ``ref`` means something only to its adapter."""

    kind: AttachmentKind
    name: str
    mime: str = "application/octet-stream"
    size: int | None = None
    ref: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ButtonPress:
    """A click on one of the bot's buttons; ``payload`` is what the core put on the button."""

    payload: str
    message_id: str | None = None


class RevisionKind(StrEnum):
    """What became of a message the chat sent earlier (design §21)."""

    EDITED = "edited"
    RECALLED = "withdrawn"
    """Recalled or deleted by its author (or a chat admin); the value is the journal's."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Revision:
    """An inbound that is not a new message but news about an earlier one: ``message_id``
    (the earlier message's platform id) was edited to the carrying message's ``text``, or
    withdrawn. The carrying ``InboundMessage.message_id`` is the event's own id (unique per
    edit), so the journal's dedupe keeps each edit once and never takes it for the message."""

    kind: RevisionKind
    message_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class InboundMessage:
    """One message (or button press) from a chat, normalised by its adapter.

    ``text`` has the leading mention of the bot removed by the adapter, which is the only
    place that knows how the platform spells a mention. ``thread_root_id`` is the platform
    thread the message was posted in (Slack ``thread_ts``, Telegram forum topic, Feishu root),
    or ``None`` for a top-level message.
    """

    channel: str
    account_id: str = ""
    chat_id: str
    chat_type: ChatType
    message_id: str
    sender: Sender
    text: str = ""
    attachments: tuple[Attachment, ...] = ()
    reply_to_message_id: str | None = None
    reply_to_bot: bool = False
    thread_root_id: str | None = None
    mentions_bot: bool = False
    button: ButtonPress | None = None
    revision: Revision | None = None
    """Set when this is an edit or a recall of an earlier message, not a message."""
    received_at: datetime = field(default_factory=utc_now)
    origin: MessageOrigin = MessageOrigin.PLATFORM
    """``OPERATOR``: a pushed prompt (``run_agent``), not a platform message. Access rules,
    addressing and command parsing do not apply, its conversation is the one the push named,
    and nothing replies to or reacts on ``message_id`` (the platform has no such message)."""

    @property
    def user_ref(self) -> str:
        """``<channel>:<user id>``, the form ``access.admins`` uses."""
        return f"{self.channel}:{self.sender.id}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Destination:
    """Where a message goes: a chat and, inside it, the conversation's topic if it has one.

    The adapter interprets ``topic_id`` (a Slack thread, a Telegram forum topic or reply
    chain anchor, a Feishu thread); the core only carries it.
    """

    channel: str
    account_id: str = ""
    chat_id: str
    chat_type: ChatType
    topic_id: str | None = None

    @classmethod
    def of(cls, key: ConversationKey, chat_type: ChatType) -> Destination:
        """The conversation's chat, and its topic when it has one."""
        return cls(
            channel=key.channel,
            account_id=key.account_id,
            chat_id=key.chat_id,
            chat_type=chat_type,
            topic_id=key.topic_id,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Button:
    label: str
    payload: str


@dataclass(frozen=True, slots=True, kw_only=True)
class OutboundText:
    """A text message to send, in Markdown; the adapter renders its platform's dialect."""

    destination: Destination
    text: str
    kind: OutboundKind
    reply_to: str | None = None
    buttons: tuple[Button, ...] = ()
    render: RenderMode = RenderMode.RICH
    dedupe_key: str = ""
    """The same key means the same message: a platform that dedupes sends uses it, so a retry
    after a crash does not post twice. The outbox sets it to the row's idempotency key at each
    attempt (it is not stored twice); empty: no dedupe."""
    private_to: str | None = None
    """The platform user id this message is for (a refused button press, "already decided by
    X"). An adapter that can show a message in a chat to one member only does so (Slack's
    ephemeral message, Feishu's card visible to one user, an alert answering that person's
    Telegram button press); one that cannot, or not this time, posts it as a normal message,
    so its text must be fit for the whole chat. A private message is a notice: it cannot be
    edited later (its ``SentRef`` may hold no message id), and one with buttons is posted."""


@dataclass(frozen=True, slots=True, kw_only=True)
class OutboundFile:
    """A file from a thread's ``outputs/`` to upload, with an optional caption."""

    destination: Destination
    path: str
    name: str
    size: int
    is_image: bool
    reply_to: str | None = None
    caption: str = ""
    dedupe_key: str = ""
    """As ``OutboundText.dedupe_key``: the same key means the same file message (and caption)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TextEdit:
    """Replace the text (and buttons) of a message the bot sent earlier."""

    destination: Destination
    message_id: str
    text: str
    kind: OutboundKind
    buttons: tuple[Button, ...] = ()
    render: RenderMode = RenderMode.RICH


@dataclass(frozen=True, slots=True, kw_only=True)
class ReactionMark:
    """Put a reaction on a message (the user's, usually) as an acknowledgement."""

    destination: Destination
    message_id: str
    reaction: Reaction


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageRemoval:
    """Delete a message the bot sent (a withdrawn turn's placeholder, an answer to a recalled
    message); a platform that cannot delete refuses it as an invalid request."""

    destination: Destination
    message_id: str


Delivery = OutboundText | TextEdit | OutboundFile | ReactionMark | MessageRemoval
"""One platform operation: what the outbox records before it is attempted."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SentRef:
    """The platform ids of what a send produced (several when the adapter had to split)."""

    message_ids: tuple[str, ...]

    @property
    def last(self) -> str:
        return self.message_ids[-1]
