"""Awaiting what a fake saw: ``Observing`` gives a fake ``wait_until``/``await_until`` and a
``_wait_first`` for its ``wait_call``/``wait_ack``-style accessors.

``wait_*`` block the calling thread on the fake's lock (woken whenever its state changes);
``await_*`` run those waits in a worker thread so a test's event loop (and an SDK on it)
keeps running.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import ClassVar, TypeVar

from tests.fakes.common.records import Guard

T = TypeVar("T")


class Observing:
    _guard: Guard
    _who: ClassVar[str] = "the fake"
    """The fake's name in the errors a wait raises (``"FakeFeishu"``)."""

    def wait_until(self, condition: Callable[[], bool], timeout: float = 5.0) -> None:
        """Block until ``condition()`` (evaluated under the fake's lock) holds."""
        self._guard.wait_until(condition, timeout, self._who)

    async def await_until(
        self,
        condition: Callable[[], bool],
        timeout: float = 5.0,  # noqa: ASYNC109 - the wait runs in a worker thread
    ) -> None:
        await asyncio.to_thread(self.wait_until, condition, timeout)

    def _wait_first(
        self,
        items: Callable[[], Iterable[T]],
        wanted: Callable[[T], bool] | None,
        timeout: float,
        missing: Callable[[], str],
    ) -> T:
        """The first of ``items()`` (seen so far or later) that is ``wanted``; after
        ``timeout`` a ``TimeoutError`` with the message ``missing()``."""
        found: list[T] = []

        def ready() -> bool:
            found[:] = [item for item in items() if wanted is None or wanted(item)][:1]
            return bool(found)

        try:
            self.wait_until(ready, timeout)
        except TimeoutError:
            raise TimeoutError(missing()) from None
        return found[0]
