"""Per-chat memory that cannot grow without bound (a bot in 100 000 chats).

``Until`` maps a chat to a time it waits for (a rate-limit slot, a held retry) and forgets
chats whose time has passed; ``RecentSet`` keeps the most recently added chats (unreachable
ones) up to a size, and ``RecentMap`` does the same for a key with a value (a message's
reaction, a cached name). All stay small however many chats the bot has seen.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, Protocol, Self, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class _Ordered(Protocol):
    def __lt__(self, other: Self, /) -> bool: ...

    def __le__(self, other: Self, /) -> bool: ...


T = TypeVar("T", bound=_Ordered)

SWEEP_FLOOR = 1024
"""No sweep below this many entries: small maps cost nothing to keep."""


class Until(Generic[K, T]):
    """Key → the time it waits until. Past times are forgotten, in sweeps whose cost is spread
    over the insertions that made them necessary (the next sweep waits for the map to double)."""

    def __init__(self, now: Callable[[], T]) -> None:
        self._now = now
        self._until: dict[K, T] = {}
        self._sweep_at = SWEEP_FLOOR

    def __len__(self) -> int:
        return len(self._until)

    def get(self, key: K) -> T | None:
        """The key's time if it has not passed yet."""
        until = self._until.get(key)
        if until is not None and until <= self._now():
            del self._until[key]
            return None
        return until

    def set(self, key: K, until: T) -> None:
        self._until[key] = until
        if len(self._until) >= self._sweep_at:
            self._sweep()

    def extend(self, key: K, until: T) -> None:
        """Wait at least until ``until`` (a later time already set stays)."""
        current = self._until.get(key)
        self.set(key, until if current is None or current < until else current)

    def _sweep(self) -> None:
        now = self._now()
        self._until = {key: until for key, until in self._until.items() if now < until}
        self._sweep_at = max(SWEEP_FLOOR, 2 * len(self._until))


class RecentSet(Generic[K]):
    """A set that keeps at most ``size`` members: adding past that drops the oldest added."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._members: dict[K, None] = {}

    def __len__(self) -> int:
        return len(self._members)

    def __contains__(self, key: object) -> bool:
        return key in self._members

    def add(self, key: K) -> None:
        self._members.pop(key, None)
        self._members[key] = None
        while len(self._members) > self._size:
            del self._members[next(iter(self._members))]

    def discard(self, key: K) -> None:
        self._members.pop(key, None)


class RecentMap(Generic[K, V]):
    """A map that keeps at most ``size`` entries: past that it drops the oldest.

    "Oldest" is the order keys were placed in: ``set`` places a new key last and leaves an
    existing one where it is (as ``dict`` does); ``keep`` and ``touch`` move the key last, so
    with them the map forgets the least recently used entry.
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: dict[K, V] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def get(self, key: K) -> V | None:
        return self._entries.get(key)

    def touch(self, key: K) -> V | None:
        """The key's value, and the key is now the most recently used."""
        if key not in self._entries:
            return None
        value = self._entries[key] = self._entries.pop(key)
        return value

    def set(self, key: K, value: V) -> None:
        """Set the value; a new key is the newest, an existing one keeps its place."""
        self._entries[key] = value
        self._trim()

    def keep(self, key: K, value: V) -> None:
        """Set the value and make the key the newest."""
        self._entries.pop(key, None)
        self._entries[key] = value
        self._trim()

    def pop(self, key: K) -> V | None:
        return self._entries.pop(key, None)

    def _trim(self) -> None:
        while len(self._entries) > self._size:
            del self._entries[next(iter(self._entries))]
