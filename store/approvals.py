"""``ApprovalStore`` over any ``Backend`` (design §24): one SQL implementation for SQLite and
PostgreSQL.

Exactly once rests on single conditional statements, never on a read followed by a write:
``decide``, ``expire_due`` and ``cancel_thread`` each move an approval only ``WHERE state =
'pending'``, so of two of them on one row (on one replica or two) one changes it; on PostgreSQL
the second waits for the first one's row lock, then finds the row no longer pending. ``claim_run``
is one ``UPDATE ... WHERE resumed_at IS NULL AND NOT EXISTS (a pending approval)``: each decider
claims after its own decision committed, so the last one to commit sees none pending, and the
row lock on the run lets one claimant through. Queries the partial index should serve spell
``'pending'`` literally (SQLite needs that to match it). Ties in ``created_at`` fall back to the
order rows were recorded in (the dialect's ``seq``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Final

from typing_extensions import override

from bot.messages import ChatType, ConversationKey
from bot.ports.approvals import (
    Approval,
    ApprovalRun,
    ApprovalState,
    ApprovalStore,
    Decided,
)
from store.dialect import Backend
from store.rows import KEY_MATCH, Columns, Row, key_values

_SELECT: Final = "SELECT * FROM approvals"
_INSERT_RUN: Final = (
    "INSERT INTO approval_runs (id, channel, account_id, chat_id, topic_id, user_id, chat_type,"
    " thread_id, correlation_id, created_at, resumed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_DECIDE: Final = (
    "UPDATE approvals SET state = ?, decided_by = ?, decided_by_name = ?, decided_at = ?,"
    " decided_args = ?, reason = ? WHERE id = ? AND state = 'pending' AND expires_at > ?"
    " RETURNING id"
)
_CLAIM: Final = (
    "UPDATE approval_runs SET resumed_at = ? WHERE id = ? AND resumed_at IS NULL"
    " AND NOT EXISTS (SELECT 1 FROM approvals WHERE run_id = approval_runs.id"
    " AND state = 'pending') RETURNING id"
)


def approval(cols: Columns) -> Approval:
    return Approval(
        id=cols.text("id"),
        run_id=cols.text("run_id"),
        position=cols.integer("position"),
        key=cols.key(),
        chat_type=ChatType(cols.text("chat_type")),
        thread_id=cols.text("thread_id"),
        asker_id=cols.text("asker_id"),
        tool=cols.text("tool"),
        args=cols.text("args"),
        description=cols.text("description"),
        allowed=cols.strings("allowed"),
        deciders=cols.text("deciders"),
        created_at=cols.at("created_at"),
        expires_at=cols.at("expires_at"),
        state=ApprovalState(cols.text("state")),
        message_id=cols.opt_text("message_id"),
        decided_by=cols.opt_text("decided_by"),
        decided_by_name=cols.opt_text("decided_by_name"),
        decided_at=cols.opt_at("decided_at"),
        decided_args=cols.opt_text("decided_args"),
        reason=cols.opt_text("reason"),
    )


def approval_run(cols: Columns) -> ApprovalRun:
    return ApprovalRun(
        id=cols.text("id"),
        key=cols.key(),
        chat_type=ChatType(cols.text("chat_type")),
        thread_id=cols.text("thread_id"),
        correlation_id=cols.text("correlation_id"),
        created_at=cols.at("created_at"),
        resumed_at=cols.opt_at("resumed_at"),
        finished_at=cols.opt_at("finished_at"),
    )


def check_belongs(run: ApprovalRun, approvals: Sequence[Approval]) -> None:
    """A paused run has at least one action, each of its own, at distinct places."""
    if not approvals:
        raise ValueError(f"approval run {run.id!r} has no approvals; a paused run waits on one")
    for each in approvals:
        if each.run_id != run.id:
            raise ValueError(
                f"approval {each.id!r} belongs to run {each.run_id!r}, not to {run.id!r}"
            )


class SqlApprovalStore(ApprovalStore):
    def __init__(self, db: Backend) -> None:
        self._db = db
        self._time = db.dialect.time
        self._newest_first = f"ORDER BY created_at DESC, {db.dialect.seq} DESC"

    def _approval(self, row: Row) -> Approval:
        return approval(self._db.dialect.columns(row))

    def _sorted(self, rows: Sequence[Row]) -> list[Approval]:
        """Rows an ``UPDATE ... RETURNING *, seq AS recorded`` returned, oldest first (neither
        engine promises an order for what RETURNING returns)."""
        columns = [self._db.dialect.columns(row) for row in rows]
        columns.sort(key=_recorded)
        return [approval(cols) for cols in columns]

    @override
    async def add(self, run: ApprovalRun, approvals: Sequence[Approval]) -> None:
        check_belongs(run, approvals)
        resumed = None if run.resumed_at is None else self._time(run.resumed_at)
        run_row = (
            run.id, *key_values(run.key), run.chat_type.value, run.thread_id,
            run.correlation_id, self._time(run.created_at), resumed,
        )  # fmt: skip
        insert = (
            "INSERT INTO approvals (id, run_id, position, channel, account_id, chat_id, topic_id,"  # noqa: S608 - fragments, not values
            " user_id, chat_type, thread_id, asker_id, tool, args, description, allowed,"
            " deciders, created_at, expires_at, state, message_id, decided_by, decided_by_name,"
            " decided_at, decided_args, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
            f" ?, {self._db.dialect.strings}, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        )
        async with self._db.transaction() as tx:
            await tx.execute(_INSERT_RUN, run_row)
            for each in approvals:
                await tx.execute(insert, self._approval_row(each))

    def _approval_row(self, a: Approval) -> tuple[object, ...]:
        decided_at = None if a.decided_at is None else self._time(a.decided_at)
        return (
            a.id, a.run_id, a.position, *key_values(a.key), a.chat_type.value, a.thread_id,
            a.asker_id, a.tool, a.args, a.description, self._db.dialect.array(a.allowed),
            a.deciders, self._time(a.created_at), self._time(a.expires_at), a.state.value,
            a.message_id, a.decided_by, a.decided_by_name, decided_at, a.decided_args, a.reason,
        )  # fmt: skip

    @override
    async def get(self, approval_id: str) -> Approval | None:
        row = await self._db.row(f"{_SELECT} WHERE id = ?", (approval_id,))
        return None if row is None else self._approval(row)

    @override
    async def run(self, run_id: str) -> tuple[ApprovalRun, list[Approval]] | None:
        found = await self._db.row("SELECT * FROM approval_runs WHERE id = ?", (run_id,))
        if found is None:
            return None
        rows = await self._db.rows(f"{_SELECT} WHERE run_id = ? ORDER BY position", (run_id,))
        return approval_run(self._db.dialect.columns(found)), [self._approval(r) for r in rows]

    @override
    async def set_message(self, approval_id: str, message_id: str) -> None:
        await self._db.execute(
            "UPDATE approvals SET message_id = ? WHERE id = ?", (message_id, approval_id)
        )

    @override
    async def decide(self, approval_id: str, decided: Decided) -> bool:
        at = self._time(decided.at)
        params = (
            decided.state.value, decided.by, decided.by_name, at, decided.args, decided.reason,
            approval_id, at,
        )  # fmt: skip
        return await self._db.row(_DECIDE, params) is not None

    @override
    async def claim_run(self, run_id: str, now: datetime) -> bool:
        return await self._db.row(_CLAIM, (self._time(now), run_id)) is not None

    @override
    async def finish_run(self, run_id: str, now: datetime) -> None:
        await self._db.execute(
            "UPDATE approval_runs SET finished_at = ? WHERE id = ? AND finished_at IS NULL",
            (self._time(now), run_id),
        )

    @override
    async def unfinished_runs(
        self, claimed_before: datetime, limit: int = 100
    ) -> list[ApprovalRun]:
        rows = await self._db.rows(
            "SELECT * FROM approval_runs WHERE resumed_at IS NOT NULL AND finished_at IS NULL"
            " AND resumed_at < ? ORDER BY resumed_at, id LIMIT ?",
            (self._time(claimed_before), limit),
        )
        return [approval_run(self._db.dialect.columns(row)) for row in rows]

    @override
    async def reclaim(self, run_id: str, claimed_at: datetime, now: datetime) -> bool:
        found = await self._db.row(
            "UPDATE approval_runs SET resumed_at = ? WHERE id = ? AND resumed_at = ?"
            " AND finished_at IS NULL RETURNING id",
            (self._time(now), run_id, self._time(claimed_at)),
        )
        return found is not None

    @override
    async def settled_runs(self, limit: int = 100) -> list[ApprovalRun]:
        rows = await self._db.rows(
            "SELECT * FROM approval_runs WHERE resumed_at IS NULL AND NOT EXISTS"
            " (SELECT 1 FROM approvals WHERE run_id = approval_runs.id AND state = 'pending')"
            " ORDER BY created_at, id LIMIT ?",
            (limit,),
        )
        return [approval_run(self._db.dialect.columns(row)) for row in rows]

    @override
    async def expire_due(self, now: datetime) -> list[Approval]:
        """Oldest first; an approval decided meanwhile is not pending and not returned."""
        rows = await self._db.rows(
            "UPDATE approvals SET state = ? WHERE state = 'pending' AND expires_at <= ?"  # noqa: S608 - fragments, not values
            f" RETURNING *, {self._db.dialect.seq} AS recorded",
            (ApprovalState.EXPIRED.value, self._time(now)),
        )
        return self._sorted(rows)

    @override
    async def cancel_thread(self, thread_id: str) -> list[Approval]:
        """Oldest first."""
        rows = await self._db.rows(
            "UPDATE approvals SET state = ? WHERE thread_id = ? AND state = 'pending'"  # noqa: S608 - fragments, not values
            f" RETURNING *, {self._db.dialect.seq} AS recorded",
            (ApprovalState.CANCELLED.value, thread_id),
        )
        return self._sorted(rows)

    @override
    async def listed(
        self,
        *,
        state: ApprovalState | None = None,
        key: ConversationKey | None = None,
        limit: int = 100,
    ) -> list[Approval]:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        where: list[str] = ["1 = 1"]
        params: list[object] = []
        if state is not None:
            where.append("state = ?")
            params.append(state.value)
        if key is not None:
            where.append(KEY_MATCH)
            params.extend(key_values(key))
        params.append(limit)
        rows = await self._db.rows(
            f"{_SELECT} WHERE {' AND '.join(where)} {self._newest_first} LIMIT ?",
            params,
        )
        return [self._approval(row) for row in rows]

    @override
    async def for_correlation(self, correlation_id: str) -> list[Approval]:
        """By run (oldest first), then position."""
        seq = self._db.dialect.seq
        rows = await self._db.rows(
            "SELECT a.* FROM approvals a JOIN approval_runs r ON r.id = a.run_id"  # noqa: S608 - fragments, not values
            f" WHERE r.correlation_id = ? ORDER BY r.created_at, r.{seq}, a.position",
            (correlation_id,),
        )
        return [self._approval(row) for row in rows]


def _recorded(cols: Columns) -> tuple[datetime, int]:
    return cols.at("created_at"), cols.integer("recorded")
