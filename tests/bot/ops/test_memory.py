"""Start-up's objects are frozen once the daemon is ready, and given back when it stops."""

from __future__ import annotations

import asyncio
import gc

from bot.ops.memory import freeze_when_ready, thaw


async def test_frozen_once_ready_and_thawed_after() -> None:
    ready = asyncio.Event()
    freezing = asyncio.create_task(freeze_when_ready(ready))
    await asyncio.sleep(0)
    assert not freezing.done()  # waits for READY
    ready.set()
    await freezing
    try:
        assert gc.get_freeze_count() > 0
    finally:
        thaw()
    assert gc.get_freeze_count() == 0
