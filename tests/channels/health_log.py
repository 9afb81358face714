"""A ``ChannelHealth`` for adapter tests: it remembers what the adapter reported."""

from __future__ import annotations

import asyncio

WAIT_S = 5.0


class HealthLog:
    """Records every report; ``wait_for`` waits until a kind was reported enough times."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.activity_count = 0
        self._changed = asyncio.Event()

    def _note(self, kind: str, reason: str = "") -> None:
        self.events.append((kind, reason))
        self._changed.set()

    def connected(self) -> None:
        self._note("connected")

    def disconnected(self, reason: str) -> None:
        self._note("disconnected", reason)

    def auth_failed(self, reason: str) -> None:
        self._note("auth_failed", reason)

    def failed(self, reason: str) -> None:
        self._note("failed", reason)

    def activity(self) -> None:
        """Too frequent to record as an event; counted."""
        self.activity_count += 1

    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.events]

    async def wait_for(self, kind: str, count: int = 1, within: float = WAIT_S) -> None:
        async with asyncio.timeout(within):
            while self.kinds().count(kind) < count:
                self._changed.clear()
                await self._changed.wait()
