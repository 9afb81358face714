"""Cancelling a child task without swallowing the caller's own cancellation."""

from __future__ import annotations

import asyncio

import pytest

from bot.lifecycle import cancel_and_wait


async def _slow_to_stop(release: asyncio.Event, stopping: asyncio.Event) -> None:
    """A child that takes a moment to finish after being cancelled (a socket closing)."""
    try:
        await asyncio.Event().wait()
    finally:
        stopping.set()
        await release.wait()


async def test_the_child_is_cancelled_and_awaited() -> None:
    release, stopping = asyncio.Event(), asyncio.Event()
    release.set()
    child = asyncio.create_task(_slow_to_stop(release, stopping))
    await asyncio.sleep(0)
    await cancel_and_wait(child)
    assert child.cancelled()


async def test_a_caller_cancelled_while_it_waits_stays_cancelled() -> None:
    release, stopping = asyncio.Event(), asyncio.Event()
    child = asyncio.create_task(_slow_to_stop(release, stopping))
    went_on = False

    async def close() -> None:
        nonlocal went_on
        await cancel_and_wait(child)
        went_on = True  # a swallowed cancellation would carry on here

    await asyncio.sleep(0)
    caller = asyncio.create_task(close())
    async with asyncio.timeout(5):
        await stopping.wait()
    caller.cancel()  # e.g. shutdown gave up on this close
    await asyncio.sleep(0)
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert not went_on
    assert child.done()
