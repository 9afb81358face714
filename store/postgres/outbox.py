"""The outbox on PostgreSQL: deliveries written down before they are attempted (design §8).

Same rows and states as ``store.outbox``. The idempotency key is unique, and enqueueing is
``INSERT ... ON CONFLICT DO NOTHING RETURNING``: two replicas recording one delivery at once
make one row, and the later one reads it back. Marking a row sent records the platform call
and links the sent messages by a trigger, and inserting a reply row with ``finishes`` marks
those journal entries handled by another (migration 0001), as in SQLite.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Final

from typing_extensions import override

from bot.errors import StoreError
from bot.ports import OutboxStore
from bot.records import DeliveryAttempt, InboundStatus, OutboxItem, OutboxRow, OutboxState
from store.codec import encode_delivery, to_utc
from store.postgres.db import PgDatabase, PgSession
from store.postgres.rows import PgColumns
from store.rows import delivery_attempt, key_values, new_outbox_row, outbox_counts, outbox_row

_SELECT: Final = "SELECT * FROM outbox"


class PgOutboxStore(OutboxStore):
    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    def _now(self) -> datetime:
        return to_utc(self._db.now())

    @override
    async def enqueue_rows(
        self, items: Sequence[OutboxItem], *, finishes: Sequence[int] = ()
    ) -> list[OutboxRow]:
        """Insert all items in one transaction; returns each item's row as it now stands.

        A new row is built from what was written; only an item whose idempotency key exists
        already is read back. ``finishes`` rides on the first row's insert (its trigger marks
        those entries handled); when that row existed already (a resumed turn, or another
        replica was first), they are marked by a statement of their own.
        """
        now = self._now()
        done = list(finishes) if finishes else None
        if not items:
            if done is not None:
                async with self._db.shared() as session:
                    await self._finish(session, done, now)
            return []
        if len(items) == 1:  # one INSERT is atomic on its own: spare the BEGIN and COMMIT
            async with self._db.shared() as session:
                return await self._record(session, items, now, done)
        async with self._db.transaction() as tx:
            return await self._record(tx, items, now, done)

    async def _record(
        self,
        session: PgSession,
        items: Sequence[OutboxItem],
        now: datetime,
        finishes: list[int] | None,
    ) -> list[OutboxRow]:
        rows: list[OutboxRow] = []
        for index, item in enumerate(items):
            done = finishes if index == 0 else None
            row, fresh = await self._insert(session, item, now, done)
            if done is not None and not fresh:
                await self._finish(session, done, now)
            rows.append(row)
        return rows

    async def _finish(self, session: PgSession, entries: list[int], now: datetime) -> None:
        await session.execute(
            "UPDATE inbound SET status = %s, updated_at = %s WHERE id = ANY (%s::bigint[])",
            (InboundStatus.HANDLED, now, entries),
        )

    async def _insert(
        self, session: PgSession, item: OutboxItem, now: datetime, finishes: list[int] | None
    ) -> tuple[OutboxRow, bool]:
        """The item's row, and whether this call created it."""
        op, payload = encode_delivery(item.delivery)
        inserted = await session.row(
            "INSERT INTO outbox (idempotency_key, op, payload, channel, account_id, chat_id,"
            " topic_id, user_id, thread_id, correlation_id, state, next_attempt_at,"
            " created_at, updated_at, finishes)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::bigint[])"
            " ON CONFLICT (idempotency_key) DO NOTHING RETURNING id",
            (
                item.idempotency_key, op, payload, *key_values(item.key), item.thread_id,
                item.correlation_id, OutboxState.PENDING, now, now, now, finishes,
            ),
        )  # fmt: skip
        if inserted is not None:
            return new_outbox_row(PgColumns(inserted).integer("id"), item, now), True
        row = await session.row(f"{_SELECT} WHERE idempotency_key = %s", (item.idempotency_key,))
        if row is None:
            raise StoreError(f"outbox row {item.idempotency_key!r} vanished while enqueueing")
        return outbox_row(PgColumns(row)), False

    @override
    async def due(
        self, now: datetime, limit: int = 100, *, holder: str | None = None
    ) -> list[OutboxRow]:
        """Pending rows whose time has come, in the order they were enqueued; with ``holder``,
        only of the chats that replica holds (``chat_leases``)."""
        rows = await self._db.rows(
            f"{_SELECT} WHERE state = 'pending' AND next_attempt_at <= %s{_held(holder)}"
            " ORDER BY id LIMIT %s",
            (to_utc(now), *_holder(holder), limit),
        )
        return [outbox_row(PgColumns(row)) for row in rows]

    @override
    async def next_due_at(self, *, holder: str | None = None) -> datetime | None:
        row = await self._db.row(
            "SELECT MIN(next_attempt_at) AS at FROM outbox"  # noqa: S608 - a constant condition
            f" WHERE state = 'pending'{_held(holder)}",
            _holder(holder),
        )
        return None if row is None else PgColumns(row).opt_at("at")

    @override
    async def get(self, row_id: int) -> OutboxRow | None:
        row = await self._db.row(f"{_SELECT} WHERE id = %s", (row_id,))
        return None if row is None else outbox_row(PgColumns(row))

    @override
    async def mark_sent(self, row_id: int, message_ids: tuple[str, ...]) -> None:
        await self._db.execute(
            "UPDATE outbox SET state = %s, attempts = attempts + 1,"
            " sent_message_ids = %s::text[], updated_at = %s WHERE id = %s",
            (OutboxState.SENT, list(message_ids), self._now(), row_id),
        )

    @override
    async def mark_retry(
        self, row_id: int, error: str, next_attempt_at: datetime, *, counts: bool = True
    ) -> None:
        await self._db.execute(
            "UPDATE outbox SET attempts = attempts + %s, last_error = %s,"
            " next_attempt_at = %s, updated_at = %s WHERE id = %s",
            (int(counts), error, to_utc(next_attempt_at), self._now(), row_id),
        )

    @override
    async def mark_dead(self, row_id: int, error: str) -> None:
        await self._db.execute(
            "UPDATE outbox SET state = %s, attempts = attempts + 1, last_error = %s,"
            " updated_at = %s WHERE id = %s",
            (OutboxState.DEAD, error, self._now(), row_id),
        )

    @override
    async def record_attempt(self, row_id: int, outcome: str, detail: str) -> None:
        await self._db.execute(
            "INSERT INTO delivery_attempts (outbox_id, at, outcome, detail)"
            " VALUES (%s, %s, %s, %s)",
            (row_id, self._now(), outcome, detail),
        )

    @override
    async def attempts(self, row_id: int) -> list[DeliveryAttempt]:
        rows = await self._db.rows(
            "SELECT * FROM delivery_attempts WHERE outbox_id = %s ORDER BY id", (row_id,)
        )
        return [delivery_attempt(PgColumns(row)) for row in rows]

    @override
    async def listing(self, state: OutboxState | None = None, limit: int = 100) -> list[OutboxRow]:
        """Rows (of one state, or all), newest first: what an operator wants to see."""
        if state is None:
            rows = await self._db.rows(f"{_SELECT} ORDER BY id DESC LIMIT %s", (limit,))
        else:
            rows = await self._db.rows(
                f"{_SELECT} WHERE state = %s ORDER BY id DESC LIMIT %s", (state, limit)
            )
        return [outbox_row(PgColumns(row)) for row in rows]

    @override
    async def for_correlation(self, correlation_id: str) -> list[OutboxRow]:
        rows = await self._db.rows(
            f"{_SELECT} WHERE correlation_id = %s ORDER BY id", (correlation_id,)
        )
        return [outbox_row(PgColumns(row)) for row in rows]

    @override
    async def revive(self, row_ids: Sequence[int] | None = None) -> int:
        """Dead rows back to pending, due now, with a fresh attempt budget."""
        now = self._now()
        revive = (
            "UPDATE outbox SET state = %s, attempts = 0, next_attempt_at = %s, updated_at = %s"
            " WHERE state = %s"
        )
        params = (OutboxState.PENDING, now, now, OutboxState.DEAD)
        if row_ids is None:
            return await self._db.write(revive, params)
        return await self._db.write(
            f"{revive} AND id = ANY (%s::bigint[])", (*params, list(row_ids))
        )

    @override
    async def purge(self, state: OutboxState) -> int:
        return await self._db.write("DELETE FROM outbox WHERE state = %s", (state,))

    @override
    async def counts(self) -> dict[OutboxState, int]:
        """Rows per state; every state is present, 0 when it has none."""
        rows = await self._db.rows("SELECT state, COUNT(*) AS n FROM outbox GROUP BY state")
        return outbox_counts(map(PgColumns, rows))


def _held(holder: str | None) -> str:
    """The condition that keeps only rows of chats ``holder`` holds (none without one)."""
    if holder is None:
        return ""
    return (
        " AND EXISTS (SELECT 1 FROM chat_leases l WHERE l.channel = outbox.channel"
        " AND l.account_id = outbox.account_id AND l.chat_id = outbox.chat_id AND l.owner = %s)"
    )


def _holder(holder: str | None) -> tuple[str, ...]:
    return () if holder is None else (holder,)
