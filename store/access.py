"""Approved and denied users, and pending pairing codes (design §10).

Every inbound message asks for its sender's status, so statuses are kept in a ``RowCache``:
``set_status`` invalidates its key, and a change committed by another process (``switchboard
pairing approve`` while the daemon runs, another replica) empties the cache within about a
second (``generation``).

A pairing code is one-time: ``take_pairing`` is one ``DELETE ... RETURNING``, so of two admins
(or replicas) taking the same code at once exactly one gets it. Expired requests are deleted
when they are taken and whenever a new request is added, so the table stays small.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from typing_extensions import override

from bot.ports import AccessStore
from bot.records import PairingRequest, UserAccess, UserStatus
from store.cache import RowCache
from store.dialect import Backend
from store.rows import Row, pairing_request, user_access

_PAIRINGS: Final = "SELECT * FROM pairing_requests"


class SqlAccessStore(AccessStore):
    def __init__(self, db: Backend) -> None:
        self._db = db
        self._time = db.dialect.time
        self._statuses: RowCache[tuple[str, str], UserStatus | None] = RowCache(db)

    def _pairing(self, row: Row) -> PairingRequest:
        return pairing_request(self._db.dialect.columns(row))

    @override
    async def status(self, channel: str, user_id: str) -> UserStatus | None:
        async def read() -> UserStatus | None:
            row = await self._db.row(
                "SELECT status FROM users WHERE channel = ? AND user_id = ?", (channel, user_id)
            )
            return None if row is None else UserStatus(self._db.dialect.columns(row).text("status"))

        return await self._statuses.lookup((channel, user_id), read)

    @override
    async def set_status(self, channel: str, user_id: str, status: UserStatus, by: str) -> None:
        self._statuses.invalidate((channel, user_id))
        await self._db.execute(
            "INSERT INTO users (channel, user_id, status, changed_by, changed_at)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT (channel, user_id) DO UPDATE SET"
            " status = excluded.status, changed_by = excluded.changed_by,"
            " changed_at = excluded.changed_at",
            (channel, user_id, status, by, self._time(self._db.now())),
        )

    @override
    async def users(self, channel: str | None = None) -> list[UserAccess]:
        if channel is None:
            rows = await self._db.rows("SELECT * FROM users ORDER BY channel, user_id")
        else:
            rows = await self._db.rows(
                "SELECT * FROM users WHERE channel = ? ORDER BY user_id", (channel,)
            )
        return [user_access(self._db.dialect.columns(row)) for row in rows]

    @override
    async def pairing_for_user(
        self, channel: str, user_id: str, now: datetime
    ) -> PairingRequest | None:
        """The user's newest unexpired request, if any."""
        row = await self._db.row(
            f"{_PAIRINGS} WHERE channel = ? AND user_id = ? AND expires_at > ?"
            f" ORDER BY created_at DESC, {self._db.dialect.seq} DESC LIMIT 1",
            (channel, user_id, self._time(now)),
        )
        return None if row is None else self._pairing(row)

    @override
    async def add_pairing(self, request: PairingRequest) -> None:
        """Record the request, deleting expired ones in the same transaction."""
        r = request
        async with self._db.transaction() as tx:
            await tx.execute(
                "DELETE FROM pairing_requests WHERE expires_at <= ?", (self._time(r.created_at),)
            )
            await tx.execute(
                "INSERT INTO pairing_requests (code, channel, user_id, display_name, chat_id,"
                " created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    r.code,
                    r.channel,
                    r.user_id,
                    r.display_name,
                    r.chat_id,
                    self._time(r.created_at),
                    self._time(r.expires_at),
                ),
            )

    @override
    async def pending_pairings(
        self, now: datetime, channel: str | None = None
    ) -> list[PairingRequest]:
        """Unexpired requests, oldest first."""
        order = f"ORDER BY created_at, {self._db.dialect.seq}"
        if channel is None:
            rows = await self._db.rows(
                f"{_PAIRINGS} WHERE expires_at > ? {order}", (self._time(now),)
            )
        else:
            rows = await self._db.rows(
                f"{_PAIRINGS} WHERE expires_at > ? AND channel = ? {order}",
                (self._time(now), channel),
            )
        return [self._pairing(row) for row in rows]

    @override
    async def take_pairing(self, code: str, now: datetime) -> PairingRequest | None:
        """Delete the request and return it, unless it had expired (then only delete)."""
        row = await self._db.row("DELETE FROM pairing_requests WHERE code = ? RETURNING *", (code,))
        if row is None:
            return None
        request = self._pairing(row)
        return request if request.expires_at > now else None

    @override
    async def drop_pairing(self, code: str) -> bool:
        return await self._db.write("DELETE FROM pairing_requests WHERE code = ?", (code,)) == 1
