"""Waiting for something to happen, with a timeout: the one helper every test and fake uses.

``wait_until`` blocks a thread on a ``threading.Condition`` that whoever changes the state
notifies (the fakes' locks do on every release), so it wakes as soon as the state changes.
``eventually`` is for async tests waiting on state that raises no event (a hub's state, a
fake's record read from another thread): it re-checks every ``every`` seconds until the
deadline. Neither ever sleeps a fixed time in place of waiting.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Awaitable, Callable


def _never() -> bool:
    return False


def wait_until(
    cond: threading.Condition,
    condition: Callable[[], bool],
    timeout: float,
    *,
    stopped: Callable[[], bool] = _never,
) -> bool:
    """Block until ``condition()`` holds (True), or ``stopped()`` does or ``timeout`` seconds
    pass (False). Both are evaluated under ``cond``, which must be notified on every change."""
    with cond:
        cond.wait_for(lambda: condition() or stopped(), timeout)
        return condition()


async def eventually(
    check: Callable[[], Awaitable[bool] | bool], within: float | None = 5.0, every: float = 0.02
) -> None:
    """Wait until ``check()`` (sync or async) holds, re-checking every ``every`` seconds.

    Raises ``TimeoutError`` after ``within`` seconds (``None``: no deadline of its own)."""
    async with asyncio.timeout(within):
        while not await _holds(check):  # noqa: ASYNC110 - the state watched raises no event
            await asyncio.sleep(every)


async def _holds(check: Callable[[], Awaitable[bool] | bool]) -> bool:
    result = check()
    if inspect.isawaitable(result):
        return bool(await result)
    return bool(result)
