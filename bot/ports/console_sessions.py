"""Logged-out console sessions (design §23), kept in the store so that a logout holds after a
restart and on every replica sharing the store, until the session would have expired anyway.

Beside the Store port (as ``bot/ports/mutes.py`` is): a store without the table still works,
and the console then remembers logouts in this process only.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol, runtime_checkable

from bot.ports.store import Store


class RevokedSessions(Protocol):
    async def revoke(self, nonce: str, expires_at: datetime, now: datetime) -> None:
        """Remember that the session ``nonce`` was logged out (kept until ``expires_at``);
        entries already expired at ``now`` are purged on the way."""
        ...

    async def revoked(self, nonce: str) -> bool:
        """Whether the session ``nonce`` was logged out."""
        ...

    async def purge(self, now: datetime) -> int:
        """Delete entries whose session expired before ``now``; how many."""
        ...


@runtime_checkable
class KnowsConsoleSessions(Protocol):
    @property
    def console_sessions(self) -> RevokedSessions: ...


def console_sessions_of(store: Store) -> RevokedSessions | None:
    """The store's ``RevokedSessions``, if it has one."""
    return store.console_sessions if isinstance(store, KnowsConsoleSessions) else None
