"""What every fake records the same way: the one lock behind its state (``Guard``, leaving
it wakes every waiter) and its redelivery policy (``Redeliver``)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType

from tests.fakes.common import waiting


class Guard:
    """The one lock behind all of a fake's state; leaving it wakes every waiter.

    Re-entrant, so a condition passed to ``wait_until`` may call the fake's accessors.
    ``closed`` is set (under the lock) when the fake stops, which ends every wait.
    """

    def __init__(self) -> None:
        self.cond = threading.Condition(threading.RLock())
        self.closed = False

    def __enter__(self) -> None:
        self.cond.acquire()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.cond.notify_all()
        self.cond.release()

    def close(self) -> None:
        """Mark the fake stopped: every waiter wakes and gives up."""
        with self:
            self.closed = True

    def wait_until(self, condition: Callable[[], bool], timeout: float, who: str) -> None:
        """Block until ``condition()`` (evaluated under the lock) holds.

        Raises ``TimeoutError`` after ``timeout`` seconds, ``RuntimeError`` if the fake
        (``who``) stopped first."""
        with self.cond:
            if waiting.wait_until(self.cond, condition, timeout, stopped=lambda: self.closed):
                return
            if self.closed:
                raise RuntimeError(f"{who} stopped while waiting")
            raise TimeoutError(f"{who}: condition not met in time")


@dataclass(frozen=True, slots=True)
class Redeliver:
    """The redelivery policy: check each delivery ``after_s`` later, resend up to ``times``."""

    after_s: float
    times: int
