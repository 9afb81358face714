"""What adapters share: the Channel port, capabilities, typed send errors and a base class.

Adapter authors import from here; the kernel's protocols live in ``bot/ports/``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable

from bot.errors import (
    AuthFailed,
    ChannelError,
    DownloadError,
    Forbidden,
    InvalidRequest,
    RateLimited,
    SendError,
    SendErrorKind,
    TargetNotFound,
    TransientSendError,
)
from bot.messages import Destination, ReactionMark, TextEdit
from bot.ports import (
    Admission,
    BotIdentity,
    Channel,
    ChannelCapabilities,
    ChannelContext,
    Publish,
    TextUnit,
    WebhookRoutes,
)

logger = logging.getLogger(__name__)

__all__ = [
    "Admission",
    "AuthFailed",
    "BaseChannel",
    "BotIdentity",
    "Channel",
    "ChannelCapabilities",
    "ChannelContext",
    "ChannelError",
    "DownloadError",
    "Forbidden",
    "InvalidRequest",
    "Publish",
    "RateLimited",
    "SendError",
    "SendErrorKind",
    "TargetNotFound",
    "TextUnit",
    "TransientSendError",
    "WebhookRoutes",
]


class BaseChannel:
    """Defaults for the optional parts of the Channel port.

    Subclasses set ``name`` and ``capabilities`` and implement start/aclose/send_text/
    send_file/download; operations a platform lacks fall back to the behaviour here.
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

    async def show_typing(self, destination: Destination) -> None:
        """A platform without a typing indicator shows nothing."""
