"""Starting channels under supervision (SPEC §12).

Transient start failures retry with capped, jittered backoff; refused credentials park the
channel (retried rarely) while every other channel keeps working.
"""

from __future__ import annotations

import asyncio
import logging

from bot.backoff import Backoff
from bot.errors import AuthFailed
from bot.hub import ChannelHub, ChannelState
from bot.ports import Channel, Publish

logger = logging.getLogger(__name__)

START_BACKOFF = Backoff(base_s=1.0, cap_s=60.0)
PARKED_RETRY_S = 600.0


async def supervise_start(channel: Channel, hub: ChannelHub, publish: Publish) -> None:
    """Start ``channel``, retrying until it runs; returns once it is running."""
    attempt = 0
    while True:
        attempt += 1
        try:
            await channel.start(publish)
        except AuthFailed as exc:
            hub.set_state(channel.name, ChannelState.PARKED, f"auth_failed: {exc}")
            await asyncio.sleep(PARKED_RETRY_S)
            continue
        except Exception as exc:
            delay = START_BACKOFF.delay(attempt)
            logger.exception("channel %s failed to start; retrying in %.1fs", channel.name, delay)
            hub.set_state(channel.name, ChannelState.RECONNECTING, f"start failed: {exc}")
            await asyncio.sleep(delay)
            continue
        hub.set_state(channel.name, ChannelState.RUNNING)
        return
