"""The kernel's own long-lived loops (router, outbox, housekeeping), run and watched together.

The worst failure a chat daemon can have is a live process that no longer answers: ``/readyz``
green, systemd content, nobody served. So no loop of the kernel may end unnoticed:

- a busy store (``StoreBusy``: the operator CLI holds the write lock) is waited out: the loop
  starts again after a capped, jittered backoff;
- any other death is logged with its traceback, makes ``/readyz`` say which loop died, and asks
  the daemon to stop with status 75, so systemd restarts it and crash recovery resumes the
  work that was in flight.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine

from bot.backoff import Backoff
from bot.errors import StoreBusy

logger = logging.getLogger(__name__)

Loop = Callable[[], Coroutine[object, object, None]]

BUSY_BACKOFF = Backoff(base_s=0.2, cap_s=10.0)
RECANCEL_S = 0.5
"""How long ``stop`` waits for a cancelled loop before cancelling it again."""


class KernelTasks:
    def __init__(self, on_death: Callable[[str], None], backoff: Backoff = BUSY_BACKOFF) -> None:
        self._on_death = on_death
        self._backoff = backoff
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self.dead: list[str] = []
        """Loops that died (``/readyz`` lists them)."""

    def start(self, name: str, loop: Loop) -> asyncio.Task[None]:
        """Run ``loop`` until it returns, restarting it after a busy store."""
        task = asyncio.create_task(self._keep(name, loop), name=name)
        self._tasks[name] = task
        return task

    def ensure(self, name: str, loop: Loop) -> None:
        """``start`` the loop unless one of that name is still running."""
        task = self._tasks.get(name)
        if task is None or task.done():
            self.start(name, loop)

    def task(self, name: str) -> asyncio.Task[None]:
        return self._tasks[name]

    def problems(self) -> list[str]:
        return [f"kernel task {name}: died" for name in self.dead]

    async def stop(self) -> None:
        """Cancel every loop and wait for them (each logs its own death, if it died).

        A loop still running ``RECANCEL_S`` after its cancellation is cancelled again: a
        library can swallow one (Python 3.11's ``asyncio.wait_for``, inside psycopg_pool's
        wait for a connection, when the connection comes at the same moment), and the loop
        would go on to its next round instead of ending.
        """
        tasks = list(self._tasks.values())
        pending = {task for task in tasks if not task.done()}
        while pending:
            for task in pending:
                task.cancel()
            _, pending = await asyncio.wait(pending, timeout=RECANCEL_S)
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _keep(self, name: str, loop: Loop) -> None:
        busy = 0
        while True:
            try:
                await loop()
            except StoreBusy as exc:
                busy += 1
                delay = self._backoff.delay(busy)
                logger.warning("%s: store busy (%s); starting again in %.1fs", name, exc, delay)
                await asyncio.sleep(delay)
                continue
            except Exception:
                logger.exception("kernel task %s died; stopping the daemon for a restart", name)
                self.dead.append(name)
                self._on_death(name)
            return
