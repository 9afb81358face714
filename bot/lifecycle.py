"""Lifecycle helpers: ``async with`` for resources that have ``start()`` and ``aclose()``
(design §18 (P5)), and cancelling a task without swallowing the caller's own cancellation.

If ``start`` fails, ``aclose`` still runs before the error propagates, so a half-opened
resource never leaks (PTB ``Application.__aenter__``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from types import TracebackType
from typing import Any, Self

logger = logging.getLogger(__name__)


class StartClose:
    async def start(self) -> None:
        raise NotImplementedError

    async def aclose(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        try:
            await self.start()
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


async def cancel_and_wait(task: asyncio.Task[Any]) -> None:
    """Cancel ``task`` and wait until it has finished.

    Its ``CancelledError`` is absorbed, but not the caller's own: if the caller is cancelled
    while it waits (a shutdown cancelling a close), that cancellation still propagates, which
    ``contextlib.suppress(CancelledError)`` would swallow.
    """
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise


async def shutdown_step(name: str, awaitable: Awaitable[object]) -> None:
    """Run one shutdown step; a failure is logged and the next step still runs."""
    try:
        await awaitable
    except TimeoutError:
        logger.warning("shutdown step %r timed out", name)
    except Exception:
        logger.exception("shutdown step %r failed", name)
