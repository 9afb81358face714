"""What start-up made is kept out of the garbage collector's sight once the daemon is ready.

Modules, settings, the kernel and the channels live as long as the process; every full
collection would walk them again (a tenth of the CPU under load, and a pause of the event loop
each time, in ``bench/telegram_throughput.py``'s profiles). ``gc.freeze`` moves them to a
permanent generation. The one cost: an object frozen there that later becomes garbage is never
freed, which here is at most the first instance of a channel that restarts (one per channel).
A daemon that stops gives them back (``thaw``): in a process that goes on (tests, benchmarks
running rounds of daemons) the stopped daemon is then freed, not kept to the end.
"""

from __future__ import annotations

import asyncio
import gc
import logging

logger = logging.getLogger(__name__)


async def freeze_when_ready(ready: asyncio.Event) -> None:
    """Collect start-up's garbage, then freeze what is left (returns once done)."""
    await ready.wait()
    collected = gc.collect()
    gc.freeze()
    logger.debug("gc: %d start-up objects collected, %d frozen", collected, gc.get_freeze_count())


def thaw() -> None:
    """Give what was frozen back to the collector (the daemon stopped)."""
    gc.unfreeze()
