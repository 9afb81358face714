"""What adapters share: the Channel port, capabilities, typed send errors and base classes.

``BaseChannel`` holds the port's defaults and the intake state; ``PlatformChannel`` adds the
lifecycle template, the settings check and the outbound façade every platform adapter uses.
Adapter authors import from here; the kernel's protocols live in ``bot/ports/``.
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable
from typing import ClassVar, Generic, Protocol, TypeVar, final, runtime_checkable

from pydantic import SecretStr
from typing_extensions import override

from bot.errors import (
    AuthFailed,
    ChannelError,
    ConfigError,
    DownloadError,
    Forbidden,
    InvalidRequest,
    RateLimited,
    SendError,
    SendErrorKind,
    TargetNotFound,
    TransientSendError,
)
from bot.messages import (
    Destination,
    MessageRemoval,
    OutboundFile,
    OutboundText,
    ReactionMark,
    SentRef,
    TextEdit,
)
from bot.ports import (
    Admission,
    BotIdentity,
    ButtonLimits,
    Channel,
    ChannelCapabilities,
    ChannelContext,
    ChannelHealth,
    Publish,
    TextUnit,
    WebhookRoutes,
)

logger = logging.getLogger(__name__)

QUESTION_BUTTON_PREFIX = "c/"
"""What a clarifying question's buttons carry (``c/<id>/<n>``, design §7)."""

__all__ = [
    "Admission",
    "AuthFailed",
    "BaseChannel",
    "BotIdentity",
    "ButtonLimits",
    "Channel",
    "ChannelCapabilities",
    "ChannelContext",
    "ChannelError",
    "DownloadError",
    "Forbidden",
    "InvalidRequest",
    "Outbound",
    "PlatformChannel",
    "Publish",
    "RateLimited",
    "SendError",
    "SendErrorKind",
    "TargetNotFound",
    "TextUnit",
    "TransientSendError",
    "WebhookRoutes",
    "marks_choice",
]


def marks_choice(payload: str) -> bool:
    """Whether a press on a button carrying ``payload`` may be drawn as "✅ Chosen: X" at once
    (Slack, Feishu): a question's buttons, which anyone may press. Any other button (an
    approval request's, design §24) is redrawn by the kernel once it has decided, and a press
    it refuses must leave the buttons for the people who may press them."""
    return payload.startswith(QUESTION_BUTTON_PREFIX)


class BaseChannel:
    """Defaults for the optional parts of the Channel port.

    Subclasses set ``name`` and ``capabilities`` and implement start/aclose/send_text/
    send_file/download (``PlatformChannel`` does most of that for a platform adapter);
    operations a platform lacks fall back to the behaviour here.
    """

    name: str
    capabilities: ChannelCapabilities

    def __init__(self) -> None:
        self._identity = BotIdentity()
        self._publish: Publish | None = None
        self._intake_open = False
        self._intake_stopped = False
        self._intake_changed = asyncio.Event()
        self._finished = asyncio.Event()
        self._spawned: set[asyncio.Task[None]] = set()

    @property
    def identity(self) -> BotIdentity:
        return self._identity

    def _spawn(self, work: Awaitable[None], what: str) -> None:
        """Run ``work`` in a named task the channel owns (cancelled by ``_cancel_spawned``);
        a platform call in it that fails is logged, not raised: it is a side effect (a
        reaction, a redrawn card), never the delivery itself."""

        async def run() -> None:
            try:
                await work
            except SendError as exc:
                logger.warning("%s %s failed: %s", self.name, what, exc)

        task = asyncio.create_task(run(), name=f"channel:{self.name}:{what}")
        self._spawned.add(task)
        task.add_done_callback(self._spawned.discard)

    async def _cancel_spawned(self) -> None:
        tasks = list(self._spawned)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _open_intake(self) -> None:
        self._intake_open = True
        self._intake_changed.set()

    def _stop_taking_events(self) -> None:
        """Intake is closed for good (drain, close): webhook calls are refused at once."""
        self._intake_open = False
        self._intake_stopped = True
        self._intake_changed.set()

    async def _intake_ready(self, within: float) -> bool:
        """For webhook receivers: whether a platform event can be journaled now.

        The daemon's HTTP server listens before channels have connected, so a webhook call
        that arrives during a start waits for intake to open (up to ``within``, below the
        platform's own request timeout) instead of being refused: a refused call makes the
        platform back off, and a message sent during a restart would wait minutes.
        """
        try:
            async with asyncio.timeout(within):
                while not self._intake_settled():
                    self._intake_changed.clear()
                    await self._intake_changed.wait()
        except TimeoutError:
            return False
        return self._intake_open

    def _intake_settled(self) -> bool:
        """Open, or stopped for good: nothing left to wait for."""
        return self._intake_open or self._intake_stopped

    async def stop_intake(self) -> None:
        self._stop_taking_events()

    async def wait_finished(self) -> None:
        await self._finished.wait()

    async def edit_text(self, edit: TextEdit) -> None:
        raise InvalidRequest(f"{self.name} cannot edit messages ({edit.message_id})")

    async def react(self, mark: ReactionMark) -> None:
        """Reactions are acknowledgements only; a platform without them ignores the mark."""

    async def delete_message(self, removal: MessageRemoval) -> None:
        raise InvalidRequest(f"{self.name} cannot delete messages ({removal.message_id})")

    async def show_typing(self, destination: Destination) -> None:
        """A platform without a typing indicator shows nothing."""


class Outbound(Protocol):
    """What an adapter's outbound object does; ``PlatformChannel`` forwards the port to it."""

    async def send_text(self, message: OutboundText) -> SentRef: ...

    async def send_file(self, file: OutboundFile) -> SentRef: ...

    async def edit_text(self, edit: TextEdit) -> None: ...

    async def react(self, mark: ReactionMark) -> None: ...

    async def show_typing(self, destination: Destination) -> None: ...


@runtime_checkable
class Deleting(Protocol):
    """An adapter's outbound object that can delete the bot's messages."""

    async def delete_message(self, removal: MessageRemoval) -> None: ...


OutT = TypeVar("OutT", bound=Outbound)
T = TypeVar("T")


class PlatformChannel(BaseChannel, ABC, Generic[OutT]):
    """A channel onto a platform: owns the lifecycle and forwards sends to an ``Outbound``.

    An adapter implements ``_connect(publish)`` (open what it needs, set ``self._out`` and
    open intake) and ``_disconnect()`` (close whatever is open; it must cope with a connect
    that stopped part-way), and may implement ``_stop_receiving()`` (stop the socket, poll
    loop or reader that brings events in; ``stop_intake`` calls it). ``start`` and ``aclose``
    are fixed: a start that fails is torn down by ``_disconnect`` before the error is
    re-raised (PTB ``Application.__aenter__``).

    While ``_out`` is unset (before start, or after a teardown that cleared it) a send
    raises ``TransientSendError(not_running)``, so the outbox retries it once the channel
    runs. Every platform call goes through ``_guard``, which reports refused credentials.
    """

    not_running: ClassVar[str]

    def __init__(self, health: ChannelHealth) -> None:
        super().__init__()
        self._health = health
        self._out: OutT | None = None

    @staticmethod
    def _required(value: str | SecretStr | None, path: str) -> str:
        """The setting at ``path``, which an enabled channel cannot do without."""
        found = value.get_secret_value() if isinstance(value, SecretStr) else (value or "")
        if not found:
            raise ConfigError(f"{path}: required when the channel is enabled")
        return found

    # ------------------------------------------------------------------ lifecycle

    @final
    async def start(self, publish: Publish) -> None:
        self._publish = publish
        try:
            await self._connect(publish)
        except BaseException:
            self._intake_open = False
            await self._disconnect()
            raise

    @final
    async def aclose(self) -> None:
        self._stop_taking_events()
        await self._disconnect()

    @override
    async def stop_intake(self) -> None:
        await super().stop_intake()
        await self._stop_receiving()

    async def _stop_receiving(self) -> None:
        """Stop what brings events in (idempotent). Nothing by default: a webhook receiver
        is refused by the closed intake alone."""

    @abstractmethod
    async def _connect(self, publish: Publish) -> None:
        """Connect and open intake; a failure part-way is torn down by ``_disconnect``."""

    @abstractmethod
    async def _disconnect(self) -> None:
        """Close what is open (all of it, or what a failed ``_connect`` opened)."""

    # ------------------------------------------------------------------ outbound

    def _outbound(self) -> OutT:
        if self._out is None:
            raise TransientSendError(self.not_running)
        return self._out

    async def _guard(self, call: Awaitable[T]) -> T:
        """A platform call; refused credentials are reported (``_auth_refused``)."""
        try:
            return await call
        except AuthFailed as exc:
            self._auth_refused(exc)
            raise

    def _auth_refused(self, exc: AuthFailed) -> None:
        """A send found the credentials refused: the supervisor parks the channel."""
        self._health.auth_failed(str(exc))

    async def send_text(self, message: OutboundText) -> SentRef:
        return await self._guard(self._outbound().send_text(message))

    async def send_file(self, file: OutboundFile) -> SentRef:
        return await self._guard(self._outbound().send_file(file))

    @override
    async def edit_text(self, edit: TextEdit) -> None:
        await self._guard(self._outbound().edit_text(edit))

    @override
    async def react(self, mark: ReactionMark) -> None:
        """Forwarded on a platform that shows reactions; ignored (even stopped) elsewhere."""
        if self.capabilities.reactions:
            await self._guard(self._outbound().react(mark))

    @override
    async def delete_message(self, removal: MessageRemoval) -> None:
        """Forwarded where the outbound object can delete; refused elsewhere."""
        out: object = self._outbound()
        if not self.capabilities.deletes or not isinstance(out, Deleting):
            await super().delete_message(removal)
            return
        await self._guard(out.delete_message(removal))

    @override
    async def show_typing(self, destination: Destination) -> None:
        """Forwarded on a platform with a typing indicator; nothing (even stopped) elsewhere."""
        if self.capabilities.typing:
            await self._guard(self._outbound().show_typing(destination))
