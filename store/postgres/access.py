"""Approved and denied users, and pending pairing codes (design §10), on PostgreSQL.

Statuses are kept in a ``RowCache`` as in ``store.access``: ``set_status`` invalidates its key,
and a change committed by another process (another replica, ``switchboard pairing approve``)
empties the cache within about a second (``PgDatabase.generation``).

A pairing code is one-time: ``take_pairing`` is one ``DELETE ... RETURNING``, so of two
admins (or replicas) taking the same code at once exactly one gets it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from typing_extensions import override

from bot.ports import AccessStore
from bot.records import PairingRequest, UserAccess, UserStatus
from store.cache import RowCache
from store.codec import to_utc
from store.postgres.db import PgDatabase
from store.postgres.rows import PgColumns
from store.rows import pairing_request, user_access

_PAIRINGS: Final = "SELECT * FROM pairing_requests"


class PgAccessStore(AccessStore):
    def __init__(self, db: PgDatabase) -> None:
        self._db = db
        self._statuses: RowCache[tuple[str, str], UserStatus | None] = RowCache(db)

    @override
    async def status(self, channel: str, user_id: str) -> UserStatus | None:
        async def read() -> UserStatus | None:
            row = await self._db.row(
                "SELECT status FROM users WHERE channel = %s AND user_id = %s",
                (channel, user_id),
            )
            return None if row is None else UserStatus(PgColumns(row).text("status"))

        return await self._statuses.lookup((channel, user_id), read)

    @override
    async def set_status(self, channel: str, user_id: str, status: UserStatus, by: str) -> None:
        self._statuses.invalidate((channel, user_id))
        await self._db.execute(
            "INSERT INTO users (channel, user_id, status, changed_by, changed_at)"
            " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (channel, user_id) DO UPDATE SET"
            " status = excluded.status, changed_by = excluded.changed_by,"
            " changed_at = excluded.changed_at",
            (channel, user_id, status, by, to_utc(self._db.now())),
        )

    @override
    async def users(self, channel: str | None = None) -> list[UserAccess]:
        if channel is None:
            rows = await self._db.rows("SELECT * FROM users ORDER BY channel, user_id")
        else:
            rows = await self._db.rows(
                "SELECT * FROM users WHERE channel = %s ORDER BY user_id", (channel,)
            )
        return [user_access(PgColumns(row)) for row in rows]

    @override
    async def pairing_for_user(
        self, channel: str, user_id: str, now: datetime
    ) -> PairingRequest | None:
        """The user's newest unexpired request, if any."""
        row = await self._db.row(
            f"{_PAIRINGS} WHERE channel = %s AND user_id = %s AND expires_at > %s"
            " ORDER BY created_at DESC, seq DESC LIMIT 1",
            (channel, user_id, to_utc(now)),
        )
        return None if row is None else pairing_request(PgColumns(row))

    @override
    async def add_pairing(self, request: PairingRequest) -> None:
        """Record the request, deleting expired ones in the same transaction."""
        r = request
        async with self._db.transaction() as tx:
            await tx.execute(
                "DELETE FROM pairing_requests WHERE expires_at <= %s", (to_utc(r.created_at),)
            )
            await tx.execute(
                "INSERT INTO pairing_requests (code, channel, user_id, display_name, chat_id,"
                " created_at, expires_at) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                (
                    r.code, r.channel, r.user_id, r.display_name, r.chat_id,
                    to_utc(r.created_at), to_utc(r.expires_at),
                ),
            )  # fmt: skip

    @override
    async def pending_pairings(
        self, now: datetime, channel: str | None = None
    ) -> list[PairingRequest]:
        """Unexpired requests, oldest first."""
        order = "ORDER BY created_at, seq"
        if channel is None:
            rows = await self._db.rows(f"{_PAIRINGS} WHERE expires_at > %s {order}", (to_utc(now),))
        else:
            rows = await self._db.rows(
                f"{_PAIRINGS} WHERE expires_at > %s AND channel = %s {order}",
                (to_utc(now), channel),
            )
        return [pairing_request(PgColumns(row)) for row in rows]

    @override
    async def take_pairing(self, code: str, now: datetime) -> PairingRequest | None:
        """Delete the request and return it, unless it had expired (then only delete)."""
        row = await self._db.row(
            "DELETE FROM pairing_requests WHERE code = %s RETURNING *", (code,)
        )
        if row is None:
            return None
        request = pairing_request(PgColumns(row))
        return request if request.expires_at > now else None

    @override
    async def drop_pairing(self, code: str) -> bool:
        deleted = await self._db.write("DELETE FROM pairing_requests WHERE code = %s", (code,))
        return deleted == 1
