"""The kernel loop ``pushes`` of a daemon alone on its store (design §19): what ``switchboard
send`` recorded while the daemon runs is taken up within a second.

Rows the CLI recorded are sent at once (``repoll``: not at the next outbox poll), and prompts it
recorded (journal reason ``AWAITING_PICKUP``) are put on the bus. On a shared store the
``ownership`` sweep takes those instead. The loop starts once the daemon is ready, after crash
recovery took what was left before.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from bot.pipeline.bus import Accepted, InboundBus
from bot.pipeline.journal import Journal
from bot.ports import Store
from bot.ports.push import AWAITING_PICKUP, PICKED_UP

logger = logging.getLogger(__name__)

PICKUP_INTERVAL_S = 1.0
LATEST_PUSH = "push.latest"
"""The store setting the CLI moves when it records a push: a daemon alone on the store notices."""


async def pick_up(
    store: Store, bus: InboundBus, repoll: Callable[[], None] | None, ready: asyncio.Event
) -> None:
    """Until cancelled: send what the CLI recorded, and run the prompts it journaled."""
    await ready.wait()
    latest = await store.settings.get(LATEST_PUSH)
    while True:
        if (newest := await store.settings.get(LATEST_PUSH)) != latest:
            latest = newest
            if repoll is not None:
                repoll()  # rows the CLI recorded: send them now
        for entry in await store.inbound.unfinished():
            if entry.reason != AWAITING_PICKUP:
                continue
            await Journal(store.inbound).noted(entry, PICKED_UP)
            bus.put_recovered(
                Accepted(
                    entry_id=entry.id, message=entry.message, correlation_id=entry.correlation_id
                )
            )
            logger.info("push delivery=%s picked up from the journal", entry.correlation_id)
        await asyncio.sleep(PICKUP_INTERVAL_S)
