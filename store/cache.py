"""A bounded copy in memory of rows read for every message (access statuses, active threads).

It stays valid while no other process commits a change (``generation``: the CLI approving a
user empties it within about a second). This process's own writes of a key call
``invalidate`` first and may ``put`` the new value after, so a read that overlapped the
write is never kept.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Hashable
from typing import Final, Generic, Protocol, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

CACHE_SIZE: Final = 10_000

OTHER_WRITERS_CHECK_S: Final = 1.0
"""How often ``generation`` asks the database whether another process committed something."""
LISTENING_CHECK_S: Final = 60.0
"""How often it still asks while notifications (PostgreSQL's NOTIFY) say when to: a safety net."""


class Generations(Protocol):
    async def generation(self) -> int:
        """A number that grows once another process has committed a change."""
        ...


class OtherWriters:
    """Turns a probe of what other processes have committed into a ``generation`` number.

    ``probe`` returns a value that changes when (and only when) someone else commits: SQLite's
    ``data_version``, PostgreSQL's count of other writers' changes. It is asked at most once per
    ``check_s``, so another process's change reaches the caches within about that long, at the
    cost of one query per interval at most. The first answer is the baseline.

    A store told of other writers' commits as they happen (PostgreSQL's LISTEN) calls
    ``nudge`` on each, so the next ``generation`` asks at once; while ``listening`` it asks by
    itself only every ``LISTENING_CHECK_S`` (or ``check_s``, if longer), as a safety net.
    Going in or out of listening nudges too: notifications may have been missed meanwhile.
    """

    __slots__ = ("_check_s", "_checked_at", "_generation", "_listening", "_seen")

    def __init__(self, check_s: float = OTHER_WRITERS_CHECK_S) -> None:
        self._check_s = check_s
        self._checked_at = -math.inf
        self._seen: object = None
        self._generation = 0
        self._listening = False

    @property
    def check_s(self) -> float:
        return self._check_s

    @property
    def listening(self) -> bool:
        return self._listening

    def set_listening(self, listening: bool) -> None:  # noqa: FBT001 - a state, not an option
        self._listening = listening
        self.nudge()

    def nudge(self) -> None:
        """Someone else committed a change: the next ``generation`` asks the database."""
        self._checked_at = -math.inf

    async def generation(self, probe: Callable[[], Awaitable[object]]) -> int:
        now = time.monotonic()
        interval = max(self._check_s, LISTENING_CHECK_S) if self._listening else self._check_s
        if now - self._checked_at >= interval:
            self._checked_at = now
            seen = await probe()
            if seen != self._seen:
                self._generation += self._seen is not None
                self._seen = seen
        return self._generation


class RowCache(Generic[K, V]):
    def __init__(self, db: Generations, *, size: int = CACHE_SIZE) -> None:
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
