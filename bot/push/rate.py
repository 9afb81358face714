"""How fast the push API takes pushes (design §19): ``http.push_api.rate_per_minute`` on
average after a burst of ``rate_burst``, for the API's bearer token (there is one).

A GCRA, as ``bot/delivery/ratelimit.py`` paces sends: one number (the theoretical arrival
time) says when the next push conforms, so a refusal can say how long to wait
(``Retry-After``). The clock is injected: tests decide time, never wait for it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

MINUTE_S = 60.0


class PushRate:
    def __init__(
        self, per_minute: int, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._interval = MINUTE_S / per_minute
        self._tolerance = burst * self._interval
        self._clock = clock
        self._tat = 0.0

    def take(self) -> float:
        """``0.0`` when a push may be taken now (it is counted), else the seconds to wait."""
        now = self._clock()
        tat = max(self._tat, now) + self._interval
        if tat - now > self._tolerance:
            return tat - now - self._tolerance
        self._tat = tat
        return 0.0
