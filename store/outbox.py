"""The outbox: deliveries written down before they are attempted (design §8).

Rows move pending -> sent, or pending -> dead once the delivery code gives up; ``revive``
puts dead rows back. ``attempts`` counts finished attempts: every ``mark_sent``,
``mark_retry`` and ``mark_dead`` reports one. Each platform call's result is also appended to
``delivery_attempts`` (``record_attempt``), a history ``revive`` does not reset.

The idempotency key is unique, and enqueueing is ``INSERT ... ON CONFLICT DO NOTHING
RETURNING``: two processes recording one delivery at once make one row, and the later one
reads it back. Marking a row sent records the platform call and links the sent messages (a
trigger), and inserting a reply row with ``finishes`` marks those journal entries handled (a
trigger), so neither costs a trip of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Final

from typing_extensions import override

from bot.errors import ChatLost, StoreError
from bot.ports import OutboxStore
from bot.records import (
    DeliveryAttempt,
    InboundStatus,
    LeaseFence,
    OutboxItem,
    OutboxRow,
    OutboxState,
)
from store.codec import encode_delivery
from store.dialect import Backend, Session
from store.rows import (
    Row,
    delivery_attempt,
    key_values,
    new_outbox_row,
    outbox_counts,
    outbox_row,
)

_SELECT: Final = "SELECT * FROM outbox"
_HELD: Final = (
    " AND EXISTS (SELECT 1 FROM chat_leases l WHERE l.channel = outbox.channel"
    " AND l.account_id = outbox.account_id AND l.chat_id = outbox.chat_id AND l.owner = ?)"
)
"""Only rows of chats the replica given holds (where chats are leased: ``chat_leases``)."""
_GUARD: Final = (
    " WHERE EXISTS (SELECT 1 FROM chat_leases l WHERE l.channel = ? AND l.account_id = ?"
    " AND l.chat_id = ? AND l.owner = ? AND l.token = ? FOR SHARE)"
)
"""A write's fence (``LeaseFence``): the chat's lease still names the owner with the token.
The lease row is locked for the rest of the transaction, so a takeover of the chat waits
for the write (and then sees what it wrote) instead of racing it."""


def _fence(fence: LeaseFence) -> tuple[object, ...]:
    chat = fence.chat
    return (chat.channel, chat.account_id, chat.chat_id, fence.replica, fence.token)


class SqlOutboxStore(OutboxStore):
    def __init__(self, db: Backend) -> None:
        self._db = db
        self._dialect = db.dialect

    def _now(self) -> object:
        return self._dialect.time(self._db.now())

    def _row(self, row: Row) -> OutboxRow:
        return outbox_row(self._dialect.columns(row))

    def _held(self, holder: str | None) -> tuple[str, tuple[str, ...]]:
        """The condition (and its parameter) that keeps ``holder``'s chats: every chat, for
        a backend that does not lease them (one daemon per SQLite store holds them all)."""
        if holder is None or not self._dialect.chat_leases:
            return "", ()
        return _HELD, (holder,)

    @override
    async def enqueue_rows(
        self,
        items: Sequence[OutboxItem],
        *,
        finishes: Sequence[int] = (),
        fence: LeaseFence | None = None,
    ) -> list[OutboxRow]:
        """Insert all items in one transaction; returns each item's row as it now stands.

        A new row is built from what was written, so recording costs no extra read; only an
        item whose idempotency key exists already is read back. ``finishes`` rides on the
        first row and are marked handled in the same transaction (the one place the rule "a
        reply finishes its messages" is written: schema 10 dropped the trigger that restated
        it), whether that row is new or existed already (a resumed turn, another replica was
        first). ``fence`` guards the first row's insert (the lease row it reads is locked
        to the end of the transaction, so a takeover waits for the rows, or they for it).
        """
        now = self._db.now()
        if not self._dialect.chat_leases:
            fence = None  # one daemon per store: every chat is its own
        done = self._dialect.array(finishes) if finishes else None
        if not items:
            if done is not None:
                async with self._db.transaction() as tx:
                    await self._fenced(tx, fence)
                    await self._finish(tx, done, now)
            return []
        if len(items) == 1 and done is None:  # one INSERT is atomic: spare BEGIN and COMMIT
            return await self._record(self._db, items, now, done, fence)
        async with self._db.transaction() as tx:
            return await self._record(tx, items, now, done, fence)

    async def _record(
        self,
        tx: Session,
        items: Sequence[OutboxItem],
        now: datetime,
        finishes: object,
        fence: LeaseFence | None,
    ) -> list[OutboxRow]:
        rows: list[OutboxRow] = []
        for index, item in enumerate(items):
            first = index == 0
            done = finishes if first else None
            row, fresh = await self._insert(tx, item, now, done, fence if first else None)
            if first and not fresh:
                await self._fenced(tx, fence)  # no insert said whether the lease still holds
            if done is not None:
                await self._finish(tx, done, now)
            rows.append(row)
        return rows

    async def _fenced(self, tx: Session, fence: LeaseFence | None) -> None:
        """Raise ``ChatLost`` unless the fence's lease still holds (locking it, as ``_GUARD``)."""
        if fence is not None and await tx.row(f"SELECT 1 AS held{_GUARD}", _fence(fence)) is None:
            raise ChatLost(f"chat {fence.chat.chat_id} is no longer {fence.replica}'s")

    async def _finish(self, tx: Session, entries: object, now: datetime) -> None:
        finished = self._dialect.in_ids.format("id")
        await tx.execute(
            f"UPDATE inbound SET status = ?, updated_at = ? WHERE {finished}",  # noqa: S608 - fragments, not values
            (InboundStatus.HANDLED, self._dialect.time(now), entries),
        )

    async def _insert(
        self,
        tx: Session,
        item: OutboxItem,
        now: datetime,
        finishes: object,
        fence: LeaseFence | None,
    ) -> tuple[OutboxRow, bool]:
        """The item's row, and whether this call created it; with ``fence``, inserted only
        while the lease holds (``ChatLost`` if it does not and no row exists)."""
        op, payload = encode_delivery(item.delivery)
        stamp = self._dialect.time(now)
        values = f"?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, {self._dialect.ids}"
        source = f"VALUES ({values})" if fence is None else f"SELECT {values}{_GUARD}"
        inserted = await tx.row(
            "INSERT INTO outbox (idempotency_key, op, payload, channel, account_id, chat_id,"
            " topic_id, user_id, thread_id, correlation_id, state, next_attempt_at,"
            f" created_at, updated_at, finishes) {source}"
            " ON CONFLICT (idempotency_key) DO NOTHING RETURNING id",
            (
                item.idempotency_key,
                op,
                payload,
                *key_values(item.key),
                item.thread_id,
                item.correlation_id,
                OutboxState.PENDING,
                stamp,
                stamp,
                stamp,
                finishes,
                *(_fence(fence) if fence is not None else ()),
            ),
        )
        if inserted is not None:
            return new_outbox_row(self._dialect.columns(inserted).integer("id"), item, now), True
        row = await tx.row(f"{_SELECT} WHERE idempotency_key = ?", (item.idempotency_key,))
        if row is None:
            await self._fenced(tx, fence)
            raise StoreError(f"outbox row {item.idempotency_key!r} vanished while enqueueing")
        return self._row(row), False

    @override
    async def due(
        self, now: datetime, limit: int = 100, *, holder: str | None = None
    ) -> list[OutboxRow]:
        """Pending rows whose time has come, in the order they were enqueued; with ``holder``,
        only of the chats that replica holds."""
        held, holding = self._held(holder)
        rows = await self._db.rows(
            f"{_SELECT} WHERE state = 'pending' AND next_attempt_at <= ?{held} ORDER BY id LIMIT ?",
            (self._dialect.time(now), *holding, limit),
        )
        return [self._row(row) for row in rows]

    @override
    async def next_due_at(self, *, holder: str | None = None) -> datetime | None:
        held, holding = self._held(holder)
        row = await self._db.row(
            f"SELECT MIN(next_attempt_at) AS at FROM outbox WHERE state = 'pending'{held}",  # noqa: S608 - fragments, not values
            holding,
        )
        return None if row is None else self._dialect.columns(row).opt_at("at")

    @override
    async def get(self, row_id: int) -> OutboxRow | None:
        row = await self._db.row(f"{_SELECT} WHERE id = ?", (row_id,))
        return None if row is None else self._row(row)

    @override
    async def mark_sent(self, row_id: int, message_ids: tuple[str, ...]) -> None:
        await self._db.execute_batched(
            "UPDATE outbox SET state = ?, attempts = attempts + 1,"  # noqa: S608 - fragments, not values
            f" sent_message_ids = {self._dialect.strings}, updated_at = ? WHERE id = ?",
            (OutboxState.SENT, self._dialect.array(message_ids), self._now(), row_id),
        )

    @override
    async def mark_retry(
        self, row_id: int, error: str, next_attempt_at: datetime, *, counts: bool = True
    ) -> None:
        await self._db.execute(
            "UPDATE outbox SET attempts = attempts + ?, last_error = ?, next_attempt_at = ?,"
            " updated_at = ? WHERE id = ?",
            (int(counts), error, self._dialect.time(next_attempt_at), self._now(), row_id),
        )

    @override
    async def mark_dead(self, row_id: int, error: str) -> None:
        await self._db.execute(
            "UPDATE outbox SET state = ?, attempts = attempts + 1, last_error = ?,"
            " updated_at = ? WHERE id = ?",
            (OutboxState.DEAD, error, self._now(), row_id),
        )

    @override
    async def record_attempt(self, row_id: int, outcome: str, detail: str) -> None:
        await self._db.execute(
            "INSERT INTO delivery_attempts (outbox_id, at, outcome, detail) VALUES (?, ?, ?, ?)",
            (row_id, self._now(), outcome, detail),
        )

    @override
    async def attempts(self, row_id: int) -> list[DeliveryAttempt]:
        rows = await self._db.rows(
            "SELECT * FROM delivery_attempts WHERE outbox_id = ? ORDER BY id", (row_id,)
        )
        return [delivery_attempt(self._dialect.columns(row)) for row in rows]

    @override
    async def listing(self, state: OutboxState | None = None, limit: int = 100) -> list[OutboxRow]:
        """Rows (of one state, or all), newest first: what an operator wants to see."""
        if state is None:
            rows = await self._db.rows(f"{_SELECT} ORDER BY id DESC LIMIT ?", (limit,))
        else:
            rows = await self._db.rows(
                f"{_SELECT} WHERE state = ? ORDER BY id DESC LIMIT ?", (state, limit)
            )
        return [self._row(row) for row in rows]

    @override
    async def for_correlation(self, correlation_id: str) -> list[OutboxRow]:
        rows = await self._db.rows(
            f"{_SELECT} WHERE correlation_id = ? ORDER BY id", (correlation_id,)
        )
        return [self._row(row) for row in rows]

    @override
    async def revive(self, row_ids: Sequence[int] | None = None) -> int:
        """Dead rows back to pending, due now, with a fresh attempt budget."""
        now = self._now()
        revive = (
            "UPDATE outbox SET state = ?, attempts = 0, next_attempt_at = ?, updated_at = ?"
            " WHERE state = ?"
        )
        params = (OutboxState.PENDING, now, now, OutboxState.DEAD)
        if row_ids is None:
            return await self._db.write(revive, params)
        return await self._db.write(
            f"{revive} AND {self._dialect.in_ids.format('id')}",
            (*params, self._dialect.array(row_ids)),
        )

    @override
    async def purge(self, state: OutboxState) -> int:
        return await self._db.write("DELETE FROM outbox WHERE state = ?", (state,))

    @override
    async def counts(self) -> dict[OutboxState, int]:
        """Rows per state; every state is present, 0 when it has none."""
        rows = await self._db.rows("SELECT state, COUNT(*) AS n FROM outbox GROUP BY state")
        return outbox_counts(map(self._dialect.columns, rows))
