"""``MuteStore`` over any ``Backend`` (design §22): one SQL implementation for
SQLite and PostgreSQL. A mute is one row per conversation key, replaced by a new mute of the
same key; expired rows are only skipped by reads until ``purge`` deletes them."""

from __future__ import annotations

from datetime import datetime
from typing import Final

from typing_extensions import override

from bot.messages import ConversationKey
from bot.ports.mutes import Mute, MuteStore
from store.dialect import Backend
from store.rows import KEY_MATCH, Columns, Row, key_values

_PUT: Final = (
    "INSERT INTO mutes (channel, account_id, chat_id, topic_id, user_id, muted_until, reason,"
    " muted_by, muted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (channel, account_id, chat_id, topic_id, user_id) DO UPDATE SET"
    " muted_until = excluded.muted_until, reason = excluded.reason,"
    " muted_by = excluded.muted_by, muted_at = excluded.muted_at"
)
_LIFT: Final = f"DELETE FROM mutes WHERE {KEY_MATCH} RETURNING *"  # noqa: S608 - a fragment


def mute(cols: Columns) -> Mute:
    return Mute(
        key=cols.key(),
        until=cols.opt_at("muted_until"),
        reason=cols.text("reason"),
        muted_by=cols.text("muted_by"),
        muted_at=cols.at("muted_at"),
    )


class SqlMuteStore(MuteStore):
    def __init__(self, db: Backend) -> None:
        self._db = db

    def _cols(self, row: Row) -> Columns:
        return self._db.dialect.columns(row)

    @override
    async def put(self, mute: Mute) -> None:
        time = self._db.dialect.time
        until = None if mute.until is None else time(mute.until)
        await self._db.execute(
            _PUT, (*key_values(mute.key), until, mute.reason, mute.muted_by, time(mute.muted_at))
        )

    @override
    async def lift(self, key: ConversationKey) -> Mute | None:
        row = await self._db.row(_LIFT, key_values(key))
        return None if row is None else mute(self._cols(row))

    @override
    async def active(self, now: datetime) -> list[Mute]:
        rows = await self._db.rows(
            "SELECT * FROM mutes WHERE muted_until IS NULL OR muted_until > ?"
            " ORDER BY muted_at, channel, chat_id, topic_id, user_id",
            (self._db.dialect.time(now),),
        )
        return [mute(self._cols(row)) for row in rows]

    @override
    async def purge(self, now: datetime) -> int:
        return await self._db.write(
            "DELETE FROM mutes WHERE muted_until IS NOT NULL AND muted_until <= ?",
            (self._db.dialect.time(now),),
        )
