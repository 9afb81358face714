"""``UsageStore`` over any ``Backend`` (design §25): one SQL implementation for SQLite and
PostgreSQL.

A turn's calls go in as the agent reports them, each report's rows (one per model) in one
transaction; the turn is counted once, on the row of its first call: by model, a turn that
used two models counts under the first it called. Cost is kept in billionths
(``cost_nanos``), so sums, and sums of sums after folding, are exact.

``fold`` replaces the per-turn rows before a time by one row per UTC day, channel, account,
chat, user and model, a day per transaction: every total is the same before and after each
(to the day: a folded row's time is its day's start), and SQLite's writers (the journal) wait
for one day's fold at most, not for weeks' of them. A day's sums are inserted, then its rows
deleted, by one replica at a time (``Dialect.try_lock``; a replica finding another folding
stops): two replicas each summing the rows before either deleted them would count them
twice. A turn's row stamped before the cutoff and committed between the two statements would
be deleted unsummed; a turn's rows are stamped with its own time, days after any cutoff.

``hit`` counts a user's messages per minute in ``usage_hits`` (one upsert ``... RETURNING``,
so replicas on PostgreSQL count together) and drops that user's earlier minutes: only the
current one is ever read, and the table keeps one row per user who wrote.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Final

from typing_extensions import override

from bot.errors import StoreError
from bot.ports.usage import Bucket, UsageDimension, UsageFilter, UsageRecord, UsageStore, UsageTotal
from store.codec import to_utc
from store.dialect import Backend, Params
from store.rows import Columns, Row

ToDb = Callable[[datetime], object]
"""``Dialect.time``: a datetime as a parameter."""
NANOS: Final = 1_000_000_000
"""Cost units per unit of ``usage.prices``' currency."""
GROUPS: Final[dict[UsageDimension, tuple[str, ...]]] = {
    "user": ("channel", "user_id"),
    "chat": ("channel", "chat_id"),
    "channel": ("channel",),
    "model": ("model",),
}
"""The columns of each grouping; users and chats are qualified by their channel."""
SUMMED: Final = (
    "turns", "calls", "unreported_calls", "input_tokens", "output_tokens", "cached_tokens",
    "cost_nanos",
)  # fmt: skip
_SUMS: Final = ", ".join(f"CAST(coalesce(sum({c}), 0) AS BIGINT) AS {c}" for c in SUMMED)
_LARGEST_FIRST: Final = "sum(input_tokens) + sum(output_tokens) DESC"
_DIMENSIONS: Final = "channel, account_id, chat_id, user_id, thread_id, model, correlation_id"
_INSERT: Final = (
    f"INSERT INTO usage (at, day, {_DIMENSIONS}, {', '.join(SUMMED)}, folded)"  # noqa: S608
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, FALSE)"
)
_FOLDED_BY: Final = "day, channel, account_id, chat_id, user_id, model"
_SUMS_OF_ROWS: Final = ", ".join(f"sum({c})" for c in SUMMED)
_HIT: Final = (
    "INSERT INTO usage_hits (channel, user_id, minute, count) VALUES (?, ?, ?, 1)"
    " ON CONFLICT (channel, user_id, minute) DO UPDATE SET count = usage_hits.count + 1"
    " RETURNING count"
)


def usage_total(cols: Columns, group: str) -> UsageTotal:
    return UsageTotal(
        group=group,
        turns=cols.integer("turns"),
        calls=cols.integer("calls"),
        unreported_calls=cols.integer("unreported_calls"),
        input_tokens=cols.integer("input_tokens"),
        output_tokens=cols.integer("output_tokens"),
        cached_tokens=cols.integer("cached_tokens"),
        cost=cols.integer("cost_nanos") / NANOS,
    )


def filtered(where: UsageFilter, time: ToDb) -> tuple[str, list[object]]:
    """The WHERE clause (never empty) and its parameters; ``time`` is the dialect's."""
    clauses = ["1 = 1"]
    params: list[object] = []
    if where.since is not None:
        clauses.append("at >= ?")
        params.append(time(where.since))
    if where.until is not None:
        clauses.append("at < ?")
        params.append(time(where.until))
    for column, value in (
        ("channel", where.channel),
        ("chat_id", where.chat_id),
        ("user_id", where.user_id),
        ("model", where.model),
    ):
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    return " AND ".join(clauses), params


def row_values(record: UsageRecord, *, first: bool, time: ToDb) -> Params:
    """One record's INSERT parameters; ``first`` counts the turn on this row."""
    counts = (record.calls, record.unreported_calls, record.input_tokens, record.output_tokens)
    if min(*counts, record.cached_tokens, record.cost) < 0:
        raise StoreError(f"usage of model {record.model!r} holds a negative count: {record!r}")
    at = to_utc(record.at)
    return (
        time(at), at.date().isoformat(), record.channel, record.account_id, record.chat_id,
        record.user_id, record.thread_id, record.model, record.correlation_id, int(first),
        record.calls, record.unreported_calls, record.input_tokens, record.output_tokens,
        record.cached_tokens, round(record.cost * NANOS),
    )  # fmt: skip


class SqlUsageStore(UsageStore):
    def __init__(self, db: Backend) -> None:
        self._db = db

    def _cols(self, row: Row) -> Columns:
        return self._db.dialect.columns(row)

    @override
    async def record(self, records: list[UsageRecord], *, counts_turn: bool = True) -> None:
        time = self._db.dialect.time
        values = [
            row_values(r, first=counts_turn and n == 0, time=time) for n, r in enumerate(records)
        ]
        if not values:
            return
        async with self._db.transaction() as tx:
            for params in values:
                await tx.execute(_INSERT, params)

    @override
    async def totals(
        self, where: UsageFilter, by: UsageDimension | None = None, limit: int = 100
    ) -> list[UsageTotal]:
        clause, params = filtered(where, self._db.dialect.time)
        if by is None:
            row = await self._db.row(f"SELECT {_SUMS} FROM usage WHERE {clause}", params)  # noqa: S608
            assert row is not None  # noqa: S101 - an aggregate without GROUP BY: one row
            return [usage_total(self._cols(row), "")]
        columns = ", ".join(GROUPS[by])
        rows = await self._db.rows(
            f"SELECT {columns}, {_SUMS} FROM usage WHERE {clause} GROUP BY {columns}"  # noqa: S608
            f" ORDER BY {_LARGEST_FIRST}, {columns} LIMIT ?",
            [*params, limit],
        )
        return [self._grouped(row, by) for row in rows]

    def _grouped(self, row: Row, by: UsageDimension) -> UsageTotal:
        cols = self._cols(row)
        return usage_total(cols, ":".join(cols.text(c) for c in GROUPS[by]))

    @override
    async def over_time(
        self, where: UsageFilter, bucket: Bucket, by: UsageDimension = "channel"
    ) -> list[tuple[datetime, UsageTotal]]:
        dialect = self._db.dialect
        start = (dialect.hour_start if bucket == "hour" else dialect.day_start).format("at")
        clause, params = filtered(where, dialect.time)
        columns = ", ".join(GROUPS[by])
        rows = await self._db.rows(
            f"SELECT {start} AS bucket, {columns}, {_SUMS} FROM usage WHERE {clause}"  # noqa: S608
            f" GROUP BY {start}, {columns} ORDER BY {start}, {columns}",
            params,
        )
        return [(self._cols(row).at("bucket"), self._grouped(row, by)) for row in rows]

    @override
    async def hit(self, channel: str, user_id: str, minute: datetime) -> int:
        at = self._db.dialect.time(to_utc(minute).replace(second=0, microsecond=0))
        async with self._db.transaction() as tx:
            await tx.execute(
                "DELETE FROM usage_hits WHERE channel = ? AND user_id = ? AND minute < ?",
                (channel, user_id, at),
            )
            row = await tx.row(_HIT, (channel, user_id, at))
        assert row is not None  # noqa: S101 - an upsert RETURNING its row
        return self._cols(row).integer("count")

    @override
    async def fold(self, before: datetime) -> int:
        dialect = self._db.dialect
        cutoff = to_utc(before)
        days = await self._db.rows(
            f"SELECT DISTINCT {dialect.day_start.format('at')} AS start FROM usage"  # noqa: S608
            " WHERE NOT folded AND at < ? ORDER BY start",
            (dialect.time(cutoff),),
        )
        folded = 0
        for day in days:
            start = self._cols(day).at("start")
            rows = await self._fold_day(start, min(start + timedelta(days=1), cutoff))
            if rows is None:
                break  # another replica is folding
            folded += rows
        return folded

    async def _fold_day(self, start: datetime, end: datetime) -> int | None:
        """Fold the per-turn rows from ``start`` to ``end`` (one day's at most); ``None``
        when another replica holds the fold lock."""
        dialect = self._db.dialect
        span = (dialect.time(start), dialect.time(end))
        async with self._db.transaction() as tx:
            row = await tx.row(dialect.try_lock, ("usage fold",))
            if row is None or not dialect.columns(row).value("held"):
                return None
            await tx.execute(
                f"INSERT INTO usage (at, {_FOLDED_BY}, {', '.join(SUMMED)}, thread_id,"  # noqa: S608
                f" correlation_id, folded) SELECT {dialect.day_start.format('min(at)')},"
                f" {_FOLDED_BY}, {_SUMS_OF_ROWS}, '', '', TRUE FROM usage"
                f" WHERE NOT folded AND at >= ? AND at < ? GROUP BY {_FOLDED_BY}",
                span,
            )
            return await tx.write("DELETE FROM usage WHERE NOT folded AND at >= ? AND at < ?", span)

    @override
    async def purge(self, before: datetime) -> int:
        cutoff = self._db.dialect.time(before)
        async with self._db.transaction() as tx:
            rows = await tx.write("DELETE FROM usage WHERE at < ?", (cutoff,))
            return rows + await tx.write("DELETE FROM usage_hits WHERE minute < ?", (cutoff,))
