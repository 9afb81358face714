"""What adapters share: the Channel port, capabilities, typed send errors and a base class.

Adapter authors import from here; the kernel's protocols live in ``bot/ports/``.
"""

from __future__ import annotations

import asyncio

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
        self._finished = asyncio.Event()

    @property
    def identity(self) -> BotIdentity:
        return self._identity

    async def stop_intake(self) -> None:
        self._intake_open = False

    async def wait_finished(self) -> None:
        await self._finished.wait()

    async def edit_text(self, edit: TextEdit) -> None:
        raise InvalidRequest(f"{self.name} cannot edit messages ({edit.message_id})")

    async def react(self, mark: ReactionMark) -> None:
        """Reactions are acknowledgements only; a platform without them ignores the mark."""

    async def show_typing(self, destination: Destination) -> None:
        """A platform without a typing indicator shows nothing."""
