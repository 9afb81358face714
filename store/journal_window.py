"""``JournalWindow`` over the inbound journal and the outbox: the newest entries and their
times, the outbox rows' times, for the operator console (``bot.ports.activity``, design §23)."""

from __future__ import annotations

from datetime import datetime
from typing import Final

from typing_extensions import override

from bot.ports.activity import DeliveryPoint, JournalPoint, JournalWindow
from bot.records import InboundStatus, JournalEntry, OutboxState
from store.dialect import Backend
from store.rows import journal_entry

_POINTS: Final = (
    "SELECT channel, status, reason, recorded_at, updated_at FROM inbound WHERE recorded_at >= ?"
    " ORDER BY recorded_at DESC LIMIT ?"
)
_DELIVERIES: Final = (
    "SELECT channel, state, created_at, updated_at FROM outbox"
    " WHERE created_at >= ? OR state = ? ORDER BY id DESC LIMIT ?"
)


class SqlJournalWindow(JournalWindow):
    def __init__(self, db: Backend) -> None:
        self._db = db

    @override
    async def recent(
        self, *, limit: int, channel: str | None = None, chat_id: str | None = None
    ) -> list[JournalEntry]:
        where: list[str] = []
        params: list[object] = []
        for column, value in (("channel", channel), ("chat_id", chat_id)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = await self._db.rows(
            f"SELECT * FROM inbound{clause} ORDER BY id DESC LIMIT ?",  # noqa: S608 - fixed fragments; values are parameters
            (*params, limit),
        )
        columns = self._db.dialect.columns
        return [journal_entry(columns(row)) for row in rows]

    @override
    async def points(self, since: datetime, limit: int) -> list[JournalPoint]:
        rows = await self._db.rows(_POINTS, (self._db.dialect.time(since), limit))
        found: list[JournalPoint] = []
        for row in rows:
            cols = self._db.dialect.columns(row)
            point = JournalPoint(
                channel=cols.text("channel"),
                status=InboundStatus(cols.text("status")),
                reason=cols.opt_text("reason"),
                recorded_at=cols.at("recorded_at"),
                updated_at=cols.at("updated_at"),
            )
            found.append(point)
        return found

    @override
    async def deliveries(self, since: datetime, limit: int) -> list[DeliveryPoint]:
        params = (self._db.dialect.time(since), str(OutboxState.PENDING), limit)
        found: list[DeliveryPoint] = []
        for row in await self._db.rows(_DELIVERIES, params):
            cols = self._db.dialect.columns(row)
            found.append(
                DeliveryPoint(
                    channel=cols.text("channel"),
                    state=OutboxState(cols.text("state")),
                    created_at=cols.at("created_at"),
                    updated_at=cols.at("updated_at"),
                )
            )
        return found
