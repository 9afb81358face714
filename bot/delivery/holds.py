"""Chats whose outbox rows wait for crash recovery (design §11), for the outbox.

Two kinds of hold keep a chat's rows in the store, in order, until they end:

- a **reservation** of a row an earlier process left (a placeholder recovery finishes itself):
  the chat sends nothing, not even that row, until recovery ``release``s it;
- a **pause** of chats being taken over from a replica that is gone, while the takeover
  withdraws or reserves what that replica left.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from bot.delivery.attempt import destination_key
from bot.delivery.ratelimit import DestinationKey
from bot.records import OutboxRow


class ChatHolds:
    def __init__(self) -> None:
        self._reserved: dict[DestinationKey, set[int]] = {}
        self._paused: dict[DestinationKey, int] = {}
        self._on_release = asyncio.Event()
        """Set (and replaced) whenever a reserved row is released."""

    def kept_back(self, key: DestinationKey) -> bool:
        """Whether the chat must send nothing now."""
        return key in self._reserved or key in self._paused

    def reserve(self, row: OutboxRow) -> None:
        self._reserved.setdefault(destination_key(row.item.delivery), set()).add(row.id)

    def is_reserved(self, row: OutboxRow) -> bool:
        return row.id in self._reserved.get(destination_key(row.item.delivery), ())

    async def until_released(self, row: OutboxRow) -> None:
        while self.is_reserved(row):
            await self._on_release.wait()

    def release(self, row: OutboxRow) -> bool:
        """End a reservation; ``True`` when that frees its chat."""
        key = destination_key(row.item.delivery)
        rows = self._reserved.get(key)
        if rows is None:
            return False
        rows.discard(row.id)
        self._on_release.set()
        self._on_release = asyncio.Event()
        if rows:
            return False
        del self._reserved[key]
        return True

    def pause(self, keys: Sequence[DestinationKey]) -> None:
        for key in keys:
            self._paused[key] = self._paused.get(key, 0) + 1

    def unpause(self, keys: Sequence[DestinationKey]) -> None:
        for key in keys:
            left = self._paused[key] - 1
            if left:
                self._paused[key] = left
            else:
                del self._paused[key]
