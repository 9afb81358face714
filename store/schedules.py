"""``ScheduleStore`` over any ``Backend`` (design §19 "Schedules"): one SQL implementation for
SQLite and PostgreSQL.

The claim is a compare-and-set: ``UPDATE schedules ... WHERE id = ? AND state = 'active' AND
next_fire_at = <due>``, then the firing's ``INSERT`` (unique on schedule and due time), in one
transaction. On PostgreSQL a second claimant's UPDATE waits for the first one's row lock and,
once it commits, matches nothing; SQLite's ``BEGIN IMMEDIATE`` serialises the two outright.
The limits are counted in the inserting transaction; on PostgreSQL two replicas adding at the
same instant may both pass the count (a limit, not an invariant).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Final

from typing_extensions import override

from bot.messages import ChatType
from bot.ports.schedules import (
    Firing,
    FiringOutcome,
    NewSchedule,
    Schedule,
    ScheduleAction,
    ScheduleCounts,
    ScheduleRefused,
    ScheduleState,
    ScheduleStore,
    ScheduleTarget,
)
from store.dialect import Backend, Params, Session
from store.rows import Columns, Row

_INSERT: Final = (
    "INSERT INTO schedules (channel, account_id, chat_id, chat_type, topic_id, user_id, action,"
    " text, at, cron, timezone, misfire_grace_s, state, next_fire_at, created_by, created_at,"
    " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'active', ?, ?, ?, ?) RETURNING *"
)
_FIRING: Final = (
    "INSERT INTO schedule_firings (schedule_id, due_at, outcome, replica, delivery_id, detail,"
    " at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (schedule_id, due_at) DO NOTHING RETURNING id"
)
_UNSETTLED: Final = (
    "SELECT f.schedule_id AS f_schedule_id, f.due_at AS f_due_at, f.outcome AS f_outcome,"
    " f.replica AS f_replica, f.delivery_id AS f_delivery_id, f.detail AS f_detail,"
    " f.at AS f_at, s.* FROM schedule_firings f JOIN schedules s ON s.id = f.schedule_id"
    " WHERE f.outcome = 'claimed' ORDER BY f.at"
)


def schedule(cols: Columns) -> Schedule:
    outcome = cols.opt_text("last_outcome")
    return Schedule(
        id=cols.integer("id"),
        target=ScheduleTarget(
            channel=cols.text("channel"),
            account_id=cols.text("account_id"),
            chat_id=cols.text("chat_id"),
            chat_type=ChatType(cols.text("chat_type")),
            topic_id=cols.text("topic_id") or None,
            user_id=cols.text("user_id") or None,
        ),
        action=ScheduleAction(cols.text("action")),
        text=cols.text("text"),
        at=cols.opt_at("at"),
        cron=cols.opt_text("cron"),
        timezone=cols.text("timezone"),
        misfire_grace_s=cols.integer("misfire_grace_s"),
        state=ScheduleState(cols.text("state")),
        next_fire_at=cols.opt_at("next_fire_at"),
        created_by=cols.text("created_by"),
        created_at=cols.at("created_at"),
        updated_at=cols.at("updated_at"),
        last_fired_at=cols.opt_at("last_fired_at"),
        last_outcome=None if outcome is None else FiringOutcome(outcome),
    )


def firing(cols: Columns, prefix: str = "") -> Firing:
    return Firing(
        schedule_id=cols.integer(f"{prefix}schedule_id"),
        due_at=cols.at(f"{prefix}due_at"),
        outcome=FiringOutcome(cols.text(f"{prefix}outcome")),
        replica=cols.text(f"{prefix}replica"),
        delivery_id=cols.opt_text(f"{prefix}delivery_id"),
        detail=cols.opt_text(f"{prefix}detail"),
        at=cols.at(f"{prefix}at"),
    )


class _Lost(Exception):
    """Another claimant moved the schedule first: roll the (empty) transaction back."""


class SqlScheduleStore(ScheduleStore):
    def __init__(self, db: Backend) -> None:
        self._db = db

    def _cols(self, row: Row) -> Columns:
        return self._db.dialect.columns(row)

    def _time(self, at: datetime | None) -> object:
        return None if at is None else self._db.dialect.time(at)

    @override
    async def add(self, new: NewSchedule, *, max_per_chat: int, max_total: int) -> Schedule:
        target = new.target
        now = self._time(self._db.now())
        async with self._db.transaction() as tx:
            await _within_limits(tx, target, max_per_chat, max_total)
            row = await tx.row(
                _INSERT,
                (
                    target.channel,
                    target.account_id,
                    target.chat_id,
                    target.chat_type.value,
                    target.topic_id or "",
                    target.user_id or "",
                    new.action.value,
                    new.text,
                    self._time(new.at),
                    new.cron,
                    new.timezone,
                    new.misfire_grace_s,
                    self._time(new.next_fire_at),
                    new.created_by,
                    now,
                    now,
                ),
            )
        assert row is not None  # noqa: S101 - INSERT ... RETURNING
        return schedule(self._cols(row))

    @override
    async def get(self, schedule_id: int) -> Schedule | None:
        row = await self._db.row("SELECT * FROM schedules WHERE id = ?", (schedule_id,))
        return None if row is None else schedule(self._cols(row))

    @override
    async def listed(
        self, *, channel: str | None = None, chat_id: str | None = None, active_only: bool = True
    ) -> list[Schedule]:
        where, params = ["1 = 1"], []
        if channel is not None:
            where.append("channel = ?")
            params.append(channel)
        if chat_id is not None:
            where.append("chat_id = ?")
            params.append(chat_id)
        if active_only:
            where.append("state = 'active'")
        sql = f"SELECT * FROM schedules WHERE {' AND '.join(where)} ORDER BY id"  # noqa: S608
        return [schedule(self._cols(row)) for row in await self._db.rows(sql, params)]

    @override
    async def cancel(self, schedule_id: int) -> Schedule | None:
        row = await self._db.row(
            "UPDATE schedules SET state = 'cancelled', next_fire_at = NULL, updated_at = ?"
            " WHERE id = ? AND state = 'active' RETURNING *",
            (self._time(self._db.now()), schedule_id),
        )
        return None if row is None else schedule(self._cols(row))

    @override
    async def due(self, now: datetime) -> list[Schedule]:
        rows = await self._db.rows(
            "SELECT * FROM schedules WHERE state = 'active' AND next_fire_at <= ?"
            " ORDER BY next_fire_at, id",
            (self._time(now),),
        )
        return [schedule(self._cols(row)) for row in rows]

    @override
    async def counts(self) -> ScheduleCounts:
        row = await self._db.row(
            "SELECT count(*) AS active, min(next_fire_at) AS soonest FROM schedules"
            " WHERE state = 'active'"
        )
        if row is None:
            return ScheduleCounts(active=0, next_fire_at=None)
        cols = self._cols(row)
        return ScheduleCounts(active=cols.integer("active"), next_fire_at=cols.opt_at("soonest"))

    @override
    async def claim(
        self, schedule: Schedule, *, next_fire_at: datetime | None, firing: Firing
    ) -> bool:
        state = ScheduleState.ACTIVE if next_fire_at is not None else ScheduleState.DONE
        outcome = None if firing.outcome is FiringOutcome.CLAIMED else firing.outcome.value
        moved = (
            self._time(next_fire_at),
            state.value,
            self._time(firing.at),
            self._time(firing.at),
            outcome,
            schedule.id,
            self._time(firing.due_at),
        )
        inserted = (
            schedule.id,
            self._time(firing.due_at),
            firing.outcome.value,
            firing.replica,
            firing.delivery_id,
            firing.detail,
            self._time(firing.at),
        )
        try:
            async with self._db.transaction() as tx:
                await _move_and_record(tx, moved, inserted)
        except _Lost:
            return False
        return True

    @override
    async def settle(
        self, firing: Firing, outcome: FiringOutcome, *, delivery_id: str | None, detail: str | None
    ) -> None:
        async with self._db.transaction() as tx:
            await tx.execute(
                "UPDATE schedule_firings SET outcome = ?, delivery_id = ?, detail = ?"
                " WHERE schedule_id = ? AND due_at = ?",
                (
                    outcome.value,
                    delivery_id,
                    detail,
                    firing.schedule_id,
                    self._time(firing.due_at),
                ),
            )
            await tx.execute(
                "UPDATE schedules SET last_outcome = ?, updated_at = ? WHERE id = ?",
                (outcome.value, self._time(self._db.now()), firing.schedule_id),
            )

    @override
    async def unsettled(self) -> list[tuple[Schedule, Firing]]:
        found = []
        for row in await self._db.rows(_UNSETTLED):
            cols = self._cols(row)
            found.append((schedule(cols), firing(cols, "f_")))
        return found

    @override
    async def firings(self, schedule_id: int, limit: int = 20) -> Sequence[Firing]:
        rows = await self._db.rows(
            "SELECT * FROM schedule_firings WHERE schedule_id = ? ORDER BY due_at DESC LIMIT ?",
            (schedule_id, limit),
        )
        return [firing(self._cols(row)) for row in rows]


_MOVE: Final = (
    "UPDATE schedules SET next_fire_at = ?, state = ?, updated_at = ?, last_fired_at = ?,"
    " last_outcome = coalesce(?, last_outcome)"
    " WHERE id = ? AND state = 'active' AND next_fire_at = ?"
)


async def _move_and_record(tx: Session, moved: Params, inserted: Params) -> None:
    """The claim's two statements; ``_Lost`` (rolling both back) unless both took."""
    if await tx.write(_MOVE, moved) != 1:
        raise _Lost
    if await tx.row(_FIRING, inserted) is None:
        raise _Lost


async def _within_limits(
    tx: Session, target: ScheduleTarget, max_per_chat: int, max_total: int
) -> None:
    row = await tx.row(
        "SELECT count(*) AS total, coalesce(sum(CASE WHEN channel = ? AND chat_id = ?"
        " THEN 1 ELSE 0 END), 0) AS chat FROM schedules WHERE state = 'active'",
        (target.channel, target.chat_id),
    )
    total = chat = 0
    if row is not None:
        total, chat = int(str(row["total"])), int(str(row["chat"]))
    if chat >= max_per_chat:
        raise ScheduleRefused(
            f"this chat has {chat} active schedules, the limit (schedules.max_per_chat is"
            f" {max_per_chat}): cancel one first"
        )
    if total >= max_total:
        raise ScheduleRefused(
            f"{total} schedules are active, the limit (schedules.max_total is {max_total})"
        )
