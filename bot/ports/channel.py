"""The Channel port: what a platform adapter implements and what it is given."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from typing_extensions import override

from bot.messages import (
    Attachment,
    Destination,
    InboundMessage,
    MessageRemoval,
    OutboundFile,
    OutboundText,
    Reaction,
    ReactionMark,
    SentRef,
    TextEdit,
)
from bot.ports.leases import NameLock

if TYPE_CHECKING:  # aiohttp loads only where HTTP is served (``bot/ops/routes.py``)
    from aiohttp import web


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


class Publish(Protocol):
    """The kernel's intake as adapters see it: call it with one message, or hand it a
    platform batch with ``many``.

    Loop-only: await it on the daemon's event loop. An adapter whose SDK calls back on a
    thread of its own goes through ``channels.thread_bridge.ThreadBridge.publish``, which
    blocks that thread until the message is journaled, so the SDK acks only what was recorded.
    """

    async def __call__(self, message: InboundMessage) -> Admission: ...

    async def many(self, messages: Sequence[InboundMessage]) -> list[Admission]:
        """Admit a batch in order with one journal write; one admission per message.

        Admission stops at the first message refused (queue full, closing): it and every
        message after it are refused, so a platform that redelivers them keeps their order.
        """
        ...


WebhookHandler = Callable[["web.Request"], Awaitable["web.StreamResponse"]]


class WebhookRoutes(Protocol):
    """Where a channel in webhook mode mounts its receiver (the daemon's HTTP server)."""

    def add_post(self, path: str, handler: WebhookHandler) -> None: ...


class ChannelHealth(Protocol):
    """How a running adapter reports its connection (design §12); feeds ``/readyz``.

    Loop-only: call it on the daemon's event loop. An SDK that runs on a thread of its own
    reports through ``channels.thread_bridge.ThreadBridge``, which marshals onto the loop.
    """

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

    def failed(self, reason: str) -> None:
        """The connection died where it cannot recover by itself (inside an SDK that stopped
        reconnecting): the supervisor closes the channel and starts a fresh instance."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class MenuCommand:
    """A command every user may run, for a platform's command menu (Telegram ``setMyCommands``)."""

    name: str
    summary: str


Exclusive = Callable[[str], AbstractAsyncContextManager[NameLock]]


class _Alone(NameLock):
    """The hold of a daemon that has no replicas: nothing can take it away."""

    @property
    @override
    def lost(self) -> bool:
        return False

    @override
    async def wait_lost(self) -> None:
        await asyncio.Event().wait()


@contextlib.asynccontextmanager
async def solely(name: str) -> AsyncIterator[NameLock]:
    """``exclusive`` for a daemon alone on its store (SQLite under the instance lock)."""
    del name
    yield _Alone()


@dataclass(frozen=True, slots=True, kw_only=True)
class ChannelContext:
    """What the daemon gives every adapter besides its settings.

    Adapters are constructed as ``Adapter(settings: bot.config.settings.Settings, context)`` by the
    registry, without I/O; ``start`` connects. ``commands`` is the kernel's own list, so an
    adapter never builds a second command registry.
    """

    routes: WebhookRoutes
    state_dir: Path
    health: ChannelHealth
    commands: tuple[MenuCommand, ...] = ()
    exclusive: Exclusive = field(default_factory=lambda: solely)
    """Held by one daemon at a time among the store's replicas: what a single-consumer
    connection (Telegram's getUpdates) runs inside; the others stand by (design §11)."""


class TextUnit(StrEnum):
    """The unit a platform counts its text limit in."""

    CHARS = "chars"
    UTF16 = "utf16"
    UTF8_BYTES = "utf8_bytes"


@dataclass(frozen=True, slots=True, kw_only=True)
class ButtonLimits:
    """What one message with option buttons (a clarification, design §7) may carry; the kernel
    fits a question to these, so the adapter only renders it."""

    max_buttons: int = 10
    """Options beyond this many are listed as numbered text, answered by number."""
    label_chars: int = 64
    """A longer option is cut to this with "…" on its button (and listed in full)."""
    text_limit: int | None = None
    """The most text above the buttons, in ``text_unit``; ``None``: ``text_limit``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ChannelCapabilities:
    """What a platform can do; the delivery code adapts to these, never to a platform name."""

    text_limit: int
    text_unit: TextUnit = TextUnit.CHARS
    edits: bool = False
    buttons: bool = False
    button_limits: ButtonLimits = ButtonLimits()
    """How many buttons, how long their labels and the text above them (with ``buttons``)."""
    threads: bool = False
    reactions: frozenset[Reaction] = frozenset()
    """The reactions this platform shows; the kernel records no others."""
    typing: bool = False
    max_file_bytes: int = 20 * 1024 * 1024
    max_image_bytes: int = 10 * 1024 * 1024
    progress_interval_dm_s: float = 1.0
    progress_interval_group_s: float = 3.0
    per_chat_interval_s: float = 0.0
    """The least time between two sends to one group chat (progress does not count)."""
    per_dm_interval_s: float = 0.0
    """The same for a private chat: 0 where the platform limits those only bot-wide."""
    global_rate_per_s: float = 0.0
    """Sends per second for the whole bot (bursts of one second's worth allowed); 0: none."""
    group_messages_per_minute: int | None = None
    """New messages (not edits or reactions) the bot may post in one group chat per minute,
    paced by the kernel's limiter; ``None``: no such cap."""
    stale_after_s: float | None = None
    """Reconnect when nothing (not even a ping) arrived for this long; ``None`` disables."""
    deletes: bool = False
    """The bot can delete its own messages (``delete_message``)."""
    idempotent_sends: bool = False
    """The platform dedupes a repeated send with the same ``dedupe_key``, answering with the
    original message instead of posting again. Crash recovery relies on it to finish a
    placeholder the platform may have taken just before a crash (design §11)."""
    listen_caveat: str | None = None
    """Why ``group_policy: listen`` may hear no unaddressed group message here: the platform
    delivers the bot only what is addressed to it (always, or without a permission it cannot
    check); ``None``: it delivers them. Logged at start and by ``switchboard check``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BotIdentity:
    """How the bot is named on its platform; used to strip ``/cmd@botname`` suffixes."""

    user_id: str = ""
    usernames: frozenset[str] = field(default_factory=frozenset)


class Channel(Protocol):
    """One platform adapter (design §14). Sends raise ``bot.errors.SendError`` subclasses.

    How the kernel drives a streamed answer (design §8), all through the outbox:

    1. ``send_text`` with ``kind=PROGRESS`` once the first text (or tool activity) arrives:
       the placeholder. Its ``SentRef`` names the message the rest edits.
    2. ``edit_text`` with ``kind=PROGRESS`` of that message, throttled by the capabilities'
       ``progress_interval_*``; any of these may be dropped under rate pressure.
    3. ``edit_text`` with ``kind=FINAL``: the answer's first chunk replaces the placeholder (or a
       short "stopped" / error text); later chunks and files follow as new messages. A final
       edit is never dropped, and it may come from a later process than the placeholder: after
       a restart, recovery finalises the previous process's placeholder by its message id. So
       an adapter that keeps per-stream state (a streaming card) must finalise from the message
       id alone when it has none.

    Text arrives already split by the kernel within ``capabilities.text_limit``: one call is
    one platform message, and an adapter never splits again.

    Every send from the outbox carries ``dedupe_key`` (the row's idempotency key). An adapter
    whose platform dedupes sends passes it on (derived as the platform needs) and declares
    ``capabilities.idempotent_sends``; a send that posts two messages (a file and its caption)
    derives a distinct key for each. Recovery then resends a placeholder the crashed process
    never saw answered under the same key, as a ``NOTICE`` with the interrupted text: the
    platform answers with the placeholder if it took it (nothing new is posted), or posts the
    notice; either way an edit to the interrupted text follows. Such a resend never starts a
    stream.
    """

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

    async def delete_message(self, removal: MessageRemoval) -> None:
        """Delete one of the bot's messages; ``InvalidRequest`` where the platform cannot."""
        ...

    async def show_typing(self, destination: Destination) -> None: ...

    async def download(self, attachment: Attachment, *, max_bytes: int) -> bytes:
        """Fetch an inbound attachment; raises ``DownloadError`` past ``max_bytes``."""
        ...
