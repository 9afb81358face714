"""Chat leases on SQLite: one daemon per store (the instance lock), so every chat is its own.

Nothing is handed between replicas here (nor rebalanced): ``adopt`` holds whatever it is asked
about and takes no entries (start-up recovery resumes the whole journal instead, design §11),
``exclusive`` is held at once, and nobody ever wakes this daemon.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from contextlib import AbstractAsyncContextManager
from datetime import datetime

from typing_extensions import override

from bot.ports import LeaseStore, NameLock
from bot.ports.channel import solely
from bot.records import Adoption, ChatRef


class SqliteLeaseStore(LeaseStore):
    @property
    @override
    def shared(self) -> bool:
        return False

    @override
    async def adopt(
        self,
        replica: str,
        now: datetime,
        expiry_s: float,
        chats: Collection[ChatRef] | None = None,
        *,
        fresh_start: bool = False,
    ) -> Adoption:
        held = frozenset(chats or ())
        return Adoption(held=held, claimed=frozenset(), others={}, entries=())

    @override
    async def orphaned(
        self, replica: str, now: datetime, expiry_s: float, *, fresh_start: bool = False
    ) -> list[ChatRef]:
        return []

    @override
    async def held(self, replica: str) -> int:
        return 0

    @override
    async def tokens(
        self, replica: str, chats: Collection[ChatRef] | None = None
    ) -> dict[ChatRef, int]:
        """No leases, so no tokens: nothing fences this store's one daemon."""
        return {}

    @override
    async def release(self, replica: str) -> int:
        return 0

    @override
    async def loads(self, now: datetime, expiry_s: float) -> dict[str, int]:
        return {}

    @override
    async def idle(self, replica: str, now: datetime, quiet_s: float, limit: int) -> list[ChatRef]:
        return []

    @override
    async def hand_over(
        self,
        replica: str,
        to: str,
        chats: Collection[ChatRef],
        *,
        now: datetime,
        expiry_s: float,
        quiet_s: float,
    ) -> list[ChatRef]:
        """Nothing to hand over to: this daemon is the store's only one."""
        return []

    @override
    async def wake(self, replica_ids: Collection[str]) -> None:
        return

    @override
    def on_wake(self, replica: str, callback: Callable[[], None]) -> None:
        return

    @override
    def exclusive(self, name: str) -> AbstractAsyncContextManager[NameLock]:
        """Held at once: the instance lock already keeps every other daemon out."""
        return solely(name)
