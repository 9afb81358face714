"""Per-destination and per-bot send pacing shared by every send kind (design §8).

Finals, command replies and notices wait for their slot; progress edits only take a slot
that is free right now, so under pressure they are the first thing dropped.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

from bot.delivery.bounded import Until

DestinationKey = tuple[str, str, str]
"""(channel, account id, chat id)."""


@dataclass(slots=True)
class _Pace:
    per_chat_interval_s: float
    global_interval_s: float
    next_global: float = 0.0


class RateLimiter:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._paces: dict[str, _Pace] = {}
        self._next_chat: Until[DestinationKey, float] = Until(clock)
        """When each chat may send next; chats whose time has passed are forgotten."""

    def configure(
        self, channel: str, *, per_chat_interval_s: float, global_rate_per_s: float
    ) -> None:
        global_interval = 1.0 / global_rate_per_s if global_rate_per_s > 0 else 0.0
        self._paces[channel] = _Pace(per_chat_interval_s, global_interval)

    def _slot(self, key: DestinationKey) -> float:
        """The earliest monotonic time this destination may send."""
        pace = self._paces.get(key[0])
        start = max(self._clock(), self._next_chat.get(key) or 0.0)
        return max(start, pace.next_global) if pace else start

    def _reserve(self, key: DestinationKey, slot: float) -> None:
        pace = self._paces.get(key[0])
        if pace is None:
            return
        self._next_chat.set(key, slot + pace.per_chat_interval_s)
        pace.next_global = slot + pace.global_interval_s

    def try_acquire(self, key: DestinationKey) -> bool:
        slot = self._slot(key)
        if slot > self._clock():
            return False
        self._reserve(key, slot)
        return True

    async def acquire(self, key: DestinationKey) -> None:
        """Reserve the next slot at once (so waiters queue fairly), then wait for it."""
        slot = self._slot(key)
        self._reserve(key, slot)
        delay = slot - self._clock()
        if delay > 0:
            await asyncio.sleep(delay)

    def block(self, key: DestinationKey, seconds: float) -> None:
        """The platform said to wait (429): nothing goes to this chat until then."""
        self._next_chat.extend(key, self._clock() + seconds)
