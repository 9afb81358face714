"""A bounded copy in memory of rows read for every message (access statuses, active threads).

It stays valid while no other process commits (``Database.generation``: the CLI approving a
user empties it within about a second). This process's own writes of a key call
``invalidate`` first and may ``put`` the new value after, so a read that overlapped the
write is never kept.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable
from typing import Final, Generic, TypeVar

from store.db import Database

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

CACHE_SIZE: Final = 10_000


class RowCache(Generic[K, V]):
    def __init__(self, db: Database, *, size: int = CACHE_SIZE) -> None:
        self._db = db
        self._size = size
        self._values: dict[K, V] = {}
        self._generation = 0
        self._changes = 0
        """Bumped by ``invalidate``: a read in flight at that moment is not kept."""

    async def lookup(self, key: K, read: Callable[[], Awaitable[V]]) -> V:
        """The kept value, or what ``read`` returns (kept unless a write overlapped it)."""
        generation = await self._db.generation()
        if generation != self._generation:
            self._values.clear()
            self._generation = generation
        if key in self._values:
            return self._values[key]
        changes = self._changes
        value = await read()
        if changes == self._changes and generation == self._generation:
            self.put(key, value)
        return value

    def invalidate(self, key: K) -> None:
        self._changes += 1
        self._values.pop(key, None)

    def put(self, key: K, value: V) -> None:
        if len(self._values) >= self._size:
            self._values.clear()
        self._values[key] = value
