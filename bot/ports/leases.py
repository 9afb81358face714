"""Chat leases between the replicas of one store, and exclusive names (design §11 "replicas").

Split from ``bot/ports/store.py`` (which re-exports both) to keep each port file short.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Protocol

from bot.records import Adoption, ChatRef


class NameLock(Protocol):
    """An exclusive hold on a name (``LeaseStore.exclusive``) while the context is entered."""

    @property
    def lost(self) -> bool:
        """The hold ended under its holder (the store connection behind it dropped)."""
        ...

    async def wait_lost(self) -> None: ...


class LeaseStore(Protocol):
    """Which replica holds which chat, and who takes the work of one that is gone (design §11).

    A chat is held by at most one live replica; a replica is live while its heartbeat is
    younger than ``expiry_s`` (``ReplicaStore``), so every lease of a killed replica lapses at
    once, when its heartbeat does. A store that is not ``shared`` serves one daemon (SQLite,
    under the instance lock): every chat is that daemon's and nothing is handed over.
    """

    @property
    def shared(self) -> bool:
        """Whether several daemons may run on this store at once."""
        ...

    async def adopt(
        self,
        replica: str,
        now: datetime,
        expiry_s: float,
        chats: Collection[ChatRef] | None = None,
        *,
        fresh_start: bool = False,
    ) -> Adoption:
        """Claim each chat of ``chats`` no live replica but ``replica`` holds, and take every
        unfinished journal entry of the chats it then holds that no live replica has in hand.

        ``chats=None``: the chats with work nobody live holds (unfinished entries, pending
        outbox rows) and this replica's own with entries nobody has taken. ``fresh_start``:
        this replica's id is its own from an earlier life (a configured ``replica_id`` after a
        crash), so what that id held counts as left behind. Holders of ``chats`` held by other
        live replicas are woken (``on_wake``) to take the entries meant for them.
        """
        ...

    async def orphaned(
        self, replica: str, now: datetime, expiry_s: float, *, fresh_start: bool = False
    ) -> list[ChatRef]:
        """The chats ``adopt(chats=None)`` would look at now."""
        ...

    async def held(self, replica: str) -> int:
        """How many chats ``replica`` holds."""
        ...

    async def tokens(
        self, replica: str, chats: Collection[ChatRef] | None = None
    ) -> dict[ChatRef, int]:
        """The fencing token of each chat (of ``chats``, or all) ``replica`` holds now; empty
        where chats are not leased."""
        ...

    async def release(self, replica: str) -> int:
        """Give up every lease of ``replica`` (a clean stop); returns how many."""
        ...

    async def loads(self, now: datetime, expiry_s: float) -> dict[str, int]:
        """How many chats each live replica holds (a live replica holding none counts 0);
        empty where not shared."""
        ...

    async def idle(self, replica: str, now: datetime, quiet_s: float, limit: int) -> list[ChatRef]:
        """Up to ``limit`` chats ``replica`` holds that are idle: no unfinished journal entry
        (on any replica), none that changed within ``quiet_s``, no pending outbox row and no
        pending clarification. Empty where not shared."""
        ...

    async def hand_over(  # noqa: PLR0913 - who, to whom, which chats, and the idle rule
        self,
        replica: str,
        to: str,
        chats: Collection[ChatRef],
        *,
        now: datetime,
        expiry_s: float,
        quiet_s: float,
    ) -> list[ChatRef]:
        """Move each of ``chats`` that ``replica`` holds and that is still idle (as ``idle``
        says, checked under the lease's row lock) to the live replica ``to``, and wake it;
        returns the chats moved. Nothing moves where not shared."""
        ...

    async def wake(self, replica_ids: Collection[str]) -> None:
        """Tell those replicas (``"*"``: all) that work may be waiting for them."""
        ...

    def on_wake(self, replica: str, callback: Callable[[], None]) -> None:
        """Call ``callback`` when someone wakes ``replica`` (or all); never, where not shared."""
        ...

    def exclusive(self, name: str) -> AbstractAsyncContextManager[NameLock]:
        """Wait until this process is the only holder of ``name`` across the store's daemons
        (a single-consumer connection such as Telegram's getUpdates), and hold it while the
        context is entered; released on exit or when the process dies."""
        ...
