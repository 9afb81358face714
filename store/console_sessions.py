"""``RevokedSessions`` over any ``Backend`` (design §23): one row per logged-out console
session, until the session's own expiry; one SQL implementation for SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import datetime

from typing_extensions import override

from bot.ports.console_sessions import RevokedSessions
from store.dialect import Backend


class SqlRevokedSessions(RevokedSessions):
    def __init__(self, db: Backend) -> None:
        self._db = db

    @override
    async def revoke(self, nonce: str, expires_at: datetime, now: datetime) -> None:
        await self.purge(now)
        await self._db.execute(
            "INSERT INTO console_revocations (nonce, expires_at) VALUES (?, ?)"
            " ON CONFLICT (nonce) DO NOTHING",
            (nonce, self._db.dialect.time(expires_at)),
        )

    @override
    async def revoked(self, nonce: str) -> bool:
        row = await self._db.row("SELECT 1 FROM console_revocations WHERE nonce = ?", (nonce,))
        return row is not None

    @override
    async def purge(self, now: datetime) -> int:
        return await self._db.write(
            "DELETE FROM console_revocations WHERE expires_at <= ?", (self._db.dialect.time(now),)
        )
