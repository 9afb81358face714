"""A channel's start, stop and close, each awaited with its deadline.

Platform SDKs can hang (a websocket that never finishes its handshake, a thread that never
joins). Every place the daemon starts or closes a channel — supervision, a reload that stops
one, shutdown — goes through here, so a hung SDK costs at most its deadline and never hangs
SIGTERM, ``/reload`` or a restart. The deadlines are per channel
(``channels.<name>.start_timeout_s`` / ``close_timeout_s``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from dataclasses import dataclass

from bot.config.settings import Settings
from bot.errors import ChannelError
from bot.ports import Channel, Publish

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class Deadlines:
    start_s: float = 60.0
    close_s: float = 10.0

    @classmethod
    def of(cls, settings: Settings, channel: str) -> Deadlines:
        block = settings.channels.blocks().get(channel)
        if block is None:
            return cls()
        return cls(start_s=block.start_timeout_s, close_s=block.close_timeout_s)


async def start_within(channel: Channel, publish: Publish, deadlines: Deadlines) -> None:
    """Start the channel; past the deadline the start is cancelled and fails as
    ``ChannelError`` (supervision retries it with backoff)."""
    deadline = asyncio.timeout(deadlines.start_s)
    try:
        async with deadline:
            await channel.start(publish)
    except TimeoutError:
        if not deadline.expired():
            raise
        raise ChannelError(f"start did not finish within {deadlines.start_s:g}s") from None


async def close_within(channel: Channel, deadlines: Deadlines) -> None:
    """Close the channel; a failure or a close past the deadline is logged, never raised."""
    await _bounded(channel, "close", channel.aclose(), deadlines.close_s)


async def stop_intake_within(channel: Channel, deadlines: Deadlines) -> None:
    """Stop taking platform events (graceful drain); bounded like a close."""
    await _bounded(channel, "stop intake", channel.stop_intake(), deadlines.close_s)


async def _bounded(channel: Channel, what: str, call: Awaitable[None], seconds: float) -> None:
    deadline = asyncio.timeout(seconds)
    try:
        async with deadline:
            await call
    except Exception:
        if not deadline.expired():
            logger.exception("channel %s failed to %s", channel.name, what)
    if deadline.expired():
        logger.error("channel %s did not %s within %gs; abandoned", channel.name, what, seconds)
