"""What the bot did, recorded before the fake answers, and how tests wait for it.

Waiting is on a ``threading.Condition`` shared with the server: the server thread records and
notifies, a test thread waits. Async tests use the ``await_*`` forms, which wait in a worker
thread so the test's loop (where the adapter runs) keeps serving.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from tests.fakes.common import waiting
from tests.fakes.telegram.errors import ApiError


@dataclass(frozen=True, slots=True, kw_only=True)
class Call:
    """One Bot API request: form fields as sent (strings), uploaded parts as bytes."""

    method: str
    params: dict[str, str]
    files: dict[str, bytes] = field(default_factory=dict)
    filenames: dict[str, str] = field(default_factory=dict)
    at: float

    def brief(self) -> str:
        shown = ", ".join(f"{k}={_clip(v)!r}" for k, v in self.params.items())
        uploads = ", ".join(f"{k}=<{len(v)} bytes>" for k, v in self.files.items())
        return f"{self.method}({', '.join(p for p in (shown, uploads) if p)})"


Predicate = Callable[[Call], bool]


def _clip(value: str, size: int = 60) -> str:
    return value if len(value) <= size else value[: size - 1] + "…"


def refuse_running_loop(name: str, instead: str) -> None:
    """Blocking waits on the test's own loop would starve the adapter under test."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(f"FakeTelegram.{name} blocks; from async code use `await fake.{instead}`")


class CallLog:
    def __init__(self, cond: threading.Condition) -> None:
        self._cond = cond
        self._calls: list[Call] = []

    def record(self, call: Call) -> None:
        with self._cond:
            self._calls.append(call)
            self._cond.notify_all()

    def calls(self, method: str | None = None) -> list[Call]:
        with self._cond:
            return [c for c in self._calls if method is None or c.method == method]

    def after(self, seen: int, timeout: float) -> list[Call]:
        """The calls after the first ``seen`` (of any method), waiting up to ``timeout`` for
        at least one; empty if none came."""
        with self._cond:
            waiting.wait_until(self._cond, lambda: len(self._calls) > seen, timeout)
            return self._calls[seen:]

    def wait(
        self, method: str, predicate: Predicate | None, count: int, timeout: float
    ) -> list[Call]:
        """The first ``count`` matching calls of ``method``, once there are that many."""
        found: list[Call] = []

        def ready() -> bool:
            found[:] = [
                c for c in self._calls if c.method == method and (predicate is None or predicate(c))
            ]
            return len(found) >= count

        with self._cond:
            if not waiting.wait_until(self._cond, ready, timeout):
                raise AssertionError(self._miss(method, predicate, count, len(found), timeout))
            return found[:count]

    def _miss(
        self, method: str, predicate: Predicate | None, count: int, got: int, timeout: float
    ) -> str:
        wanted = f"{count} {method} call(s)" + (" matching the predicate" if predicate else "")
        same = [c.brief() for c in self._calls if c.method == method][-8:]
        totals = Counter(c.method for c in self._calls)
        seen = ", ".join(f"{name} x{n}" for name, n in totals.items()) or "nothing"
        lines = [f"FakeTelegram: expected {wanted} within {timeout:g} s, got {got}."]
        lines.append(f"{method} calls seen: " + ("; ".join(same) if same else "none"))
        lines.append(f"all calls: {seen}")
        return "\n".join(lines)


class Injections:
    """Scripted failures and delays, consumed one per call of the named method."""

    def __init__(self) -> None:
        self._faults: dict[str, deque[ApiError]] = {}
        self._delays: dict[str, deque[float]] = {}

    def fail(self, method: str, error: ApiError, times: int) -> None:
        self._faults.setdefault(method.lower(), deque()).extend([error] * times)

    def delay(self, method: str, seconds: float, times: int) -> None:
        self._delays.setdefault(method.lower(), deque()).extend([seconds] * times)

    def take(self, method: str) -> tuple[float, ApiError | None]:
        delays, faults = self._delays.get(method.lower()), self._faults.get(method.lower())
        delay = delays.popleft() if delays else 0.0
        return delay, faults.popleft() if faults else None
