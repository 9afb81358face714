"""The bounded inbound queue between adapters and the router (design §5 "bounded intake").

Capacity is reserved *before* a message is journaled, so a full queue rejects a message
before the platform is acknowledged and nothing accepted is ever dropped for lack of room.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass

from bot.messages import InboundMessage


@dataclass(frozen=True, slots=True, kw_only=True)
class Accepted:
    """A journaled inbound message on its way to the router."""

    entry_id: int
    message: InboundMessage
    correlation_id: str
    recovered: bool = False
    interrupted: int = 0
    """Crashes counted against the message so far (its agent run was under way, design §11)."""


class BusClosed(Exception):
    """The bus was closed and has no more items."""


class InboundBus:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._items: deque[Accepted] = deque()
        self._reserved = 0
        self._closed = False
        self._drain = False
        self._ready = asyncio.Event()

    @property
    def depth(self) -> int:
        return len(self._items) + self._reserved

    @property
    def closed(self) -> bool:
        return self._closed

    def reserve(self) -> bool:
        """Claim room for one message; ``False`` when full or closed."""
        if self._closed or self.depth >= self.capacity:
            return False
        self._reserved += 1
        return True

    def release(self) -> None:
        """Give back a reservation that will not be used (a duplicate, an error)."""
        self._reserved -= 1

    def put_reserved(self, item: Accepted) -> None:
        self._reserved -= 1
        self._items.append(item)
        self._ready.set()

    def put_recovered(self, item: Accepted) -> None:
        """Requeue a journaled message at startup; capacity does not apply (it was accepted)."""
        self._items.append(item)
        self._ready.set()

    def close(self, *, drain: bool = False) -> None:
        """Refuse new items; with ``drain`` the consumer still gets what is queued."""
        self._closed = True
        self._drain = drain
        self._ready.set()

    async def get(self) -> Accepted:
        """The next item; raises ``BusClosed`` once closed (queued items stay journaled)."""
        while not self._items:
            if self._closed:
                raise BusClosed
            self._ready.clear()
            await self._ready.wait()
        if self._closed and not self._drain:
            raise BusClosed
        return self._items.popleft()
