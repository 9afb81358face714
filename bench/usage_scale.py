"""Usage queries at a million turns (design §25): what ``switchboard usage``, ``/usage`` and a
budget check cost once the usage table is large, and what folding it costs.

A fresh store (SQLite in a temporary directory; with ``--postgres URL`` also a fresh schema
there, dropped afterwards) is migrated by the real store, then filled in bulk with ``--turns``
turns over the 90 days before a fixed "now" (late in a month), in time order as a daemon
records them, of 5,000 users in 400 chats: a fifth of them used two models, so there are
about 1.2 rows per turn. SQLite is filled with ``executemany`` in one
transaction, PostgreSQL with ``COPY``; the rows are spelled as the store spells them. Then,
through the real ``store.usage``:

- ``totals by X``: the month so far, grouped by user, chat, channel and model (top 50);
- ``over_time``: the last 30 days by day and channel;
- ``budget check``: one user's total since today's midnight (what a budget asks before each
  turn), for many users, one at a time;
- ``fold``: every per-turn row but the last 35 days' (``usage.detail_days``' default), once;
  the month's and all time's totals are compared before and after (``totals_kept``);
- ``90 days by user, folded``: all the data grouped by user, once most of it is folded.

Prints a table per backend, then one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import secrets
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import psycopg  # noqa: E402
from psycopg import sql  # noqa: E402

from bot.ports.usage import UsageFilter, UsageStore, UsageTotal  # noqa: E402
from store.codec import to_db_time  # noqa: E402
from store.postgres import PostgresStore  # noqa: E402
from store.sqlite import DB_FILENAME, SqliteStore  # noqa: E402

NOW = datetime(2026, 12, 28, 18, 0, tzinfo=UTC)
MONTH = NOW.replace(day=1, hour=0)
TODAY = NOW.replace(hour=0)
DAYS = 90
DETAIL_DAYS = 35
USERS, CHATS = 5000, 400
CHANNELS = ("telegram", "slack")
MODELS = ("gpt-4o", "gpt-4o-mini", "o3")
COLUMNS = (
    "at", "day", "channel", "account_id", "chat_id", "user_id", "thread_id", "model",
    "correlation_id", "turns", "calls", "unreported_calls", "input_tokens", "output_tokens",
    "cached_tokens", "cost_nanos", "folded",
)  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class Row:
    at: datetime
    values: tuple[object, ...]
    """``COLUMNS`` but ``at``, ``day`` and ``folded``, which each backend spells its way."""


def turn_rows(turns: int, seed: int) -> Iterator[Row]:
    rng = random.Random(seed)  # noqa: S311 - load, not secrets
    span = DAYS * 86400
    for n in range(turns):
        at = NOW - timedelta(seconds=span * (turns - n) / turns)  # in order, as turns end
        person = rng.randrange(USERS)  # on one channel, mostly in their own team's chat
        channel = CHANNELS[person % 2]
        team = person % CHATS if rng.random() < 0.8 else rng.randrange(CHATS)
        user, chat = f"u{person}", f"c{team}"
        models = rng.sample(MODELS, 2) if rng.random() < 0.2 else [rng.choice(MODELS)]
        for first, model in enumerate(models):
            tokens = rng.randrange(200, 20_000)
            yield Row(
                at=at,
                values=(channel, "", chat, user, f"th-{chat}", model, f"corr-{n}", int(first == 0),
                        rng.randrange(1, 4), int(rng.random() < 0.01), tokens, tokens // 8,
                        tokens // 3, tokens * 3000),  # $3 per million input tokens
            )  # fmt: skip


def _sqlite_rows(rows: Iterator[Row]) -> Iterator[tuple[object, ...]]:
    for row in rows:
        yield (to_db_time(row.at), row.at.date().isoformat(), *row.values, 0)


def fill_sqlite(path: Path, turns: int, seed: int) -> None:
    names = ", ".join(COLUMNS)
    marks = ", ".join("?" * len(COLUMNS))
    with sqlite3.connect(path, isolation_level=None) as conn:
        conn.execute("BEGIN")
        conn.executemany(
            f"INSERT INTO usage ({names}) VALUES ({marks})",  # noqa: S608 - our columns
            _sqlite_rows(turn_rows(turns, seed)),
        )
        conn.execute("COMMIT")
    conn.close()


async def fill_postgres(url: str, schema: str, turns: int, seed: int) -> None:
    """``COPY`` in one transaction, then ``ANALYZE`` (fresh statistics, as autovacuum's)."""
    table = sql.Identifier(schema, "usage")
    copy = sql.SQL("COPY {} ({}) FROM STDIN").format(
        table, sql.SQL(", ").join(map(sql.Identifier, COLUMNS))
    )
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        async with conn.transaction(), conn.cursor() as cursor, cursor.copy(copy) as feed:
            for row in turn_rows(turns, seed):
                await feed.write_row((row.at, row.at.date(), *row.values, False))
        await conn.execute(sql.SQL("ANALYZE {}").format(table))


async def drop_schema(url: str, schema: str) -> None:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(
            sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
        )


async def timed(runs: int, query: Callable[[int], Awaitable[object]]) -> dict[str, float]:
    """Median and slowest milliseconds of ``query(n)``, one at a time, after one warm-up."""
    await query(-1)
    samples = []
    for n in range(runs):
        started = time.perf_counter()
        await query(n)
        samples.append((time.perf_counter() - started) * 1000)
    return {"p50_ms": round(statistics.median(samples), 2), "max_ms": round(max(samples), 2)}


async def measure(usage: UsageStore, runs: int, checks: int) -> dict[str, Any]:
    month = UsageFilter(since=MONTH, until=NOW)
    results: dict[str, Any] = {}
    for by in ("user", "chat", "channel", "model"):

        async def grouped(_: int, by: Any = by) -> object:
            return await usage.totals(month, by=by, limit=50)

        results[f"totals by {by}"] = await timed(runs, grouped)

    async def daily(_: int) -> object:
        return await usage.over_time(UsageFilter(since=NOW - timedelta(days=30)), "day")

    results["over_time 30 days"] = await timed(runs, daily)

    async def budget(n: int) -> object:
        person = (n * 7919) % USERS
        where = UsageFilter(since=TODAY, channel=CHANNELS[person % 2], user_id=f"u{person}")
        return await usage.totals(where)

    results["budget check"] = await timed(checks, budget)
    before = await _kept_totals(usage)
    started = time.perf_counter()
    folded = await usage.fold(NOW - timedelta(days=DETAIL_DAYS))
    results["fold"] = {"p50_ms": round((time.perf_counter() - started) * 1000, 1)}
    results["rows_folded"] = folded
    results["totals_kept"] = await _kept_totals(usage) == before

    async def by_user(_: int) -> object:
        return await usage.totals(UsageFilter(since=NOW - timedelta(days=DAYS)), by="user")

    results["90 days by user, folded"] = await timed(runs, by_user)
    return results


async def _kept_totals(usage: UsageStore) -> list[list[UsageTotal]]:
    return [
        await usage.totals(UsageFilter(since=MONTH), by="model"),
        await usage.totals(UsageFilter()),
    ]


async def on_sqlite(state: Path, turns: int, seed: int, runs: int, checks: int) -> dict[str, Any]:
    path = state / DB_FILENAME
    async with SqliteStore(path):  # creates the file and its schema
        pass
    started = time.monotonic()
    await asyncio.to_thread(fill_sqlite, path, turns, seed)
    fill_s = time.monotonic() - started
    async with SqliteStore(path, clock=lambda: NOW) as store:
        results = await measure(store.usage, runs, checks)
    megabytes = sum(f.stat().st_size for f in path.parent.iterdir()) / 1e6
    return {"backend": "sqlite", "fill_s": round(fill_s, 1), "db_mb": round(megabytes, 1)} | results


async def on_postgres(url: str, turns: int, seed: int, runs: int, checks: int) -> dict[str, Any]:
    schema = f"bench_usage_{secrets.token_hex(5)}"
    try:
        async with PostgresStore(url, schema=schema, clock=lambda: NOW):  # migrates
            pass
        started = time.monotonic()
        await fill_postgres(url, schema, turns, seed)
        fill_s = time.monotonic() - started
        async with PostgresStore(url, schema=schema, clock=lambda: NOW) as store:
            results = await measure(store.usage, runs, checks)
    finally:
        await drop_schema(url, schema)
    return {"backend": "postgres", "fill_s": round(fill_s, 1)} | results


def table(turns: int, results: Sequence[dict[str, Any]]) -> str:
    lines = [f"usage_scale: {turns:,} turns over {DAYS} days, now {NOW:%Y-%m-%d %H:%M} UTC"]
    for result in results:
        lines.append(
            f"\n{result['backend']}: filled in {result['fill_s']} s; fold folded"
            f" {result['rows_folded']:,} rows, totals kept: {result['totals_kept']}"
        )
        lines.append(f"  {'query':<26}{'p50 ms':>10}{'max ms':>10}")
        for name, value in result.items():
            if isinstance(value, dict):
                slowest = value.get("max_ms", "")
                lines.append(f"  {name:<26}{value['p50_ms']:>10}{slowest:>10}")
    return "\n".join(lines)


async def run(
    turns: int, postgres: str | None, *, runs: int, checks: int, seed: int = 1
) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as state:
        results = [await on_sqlite(Path(state), turns, seed, runs, checks)]
    if postgres:
        results.append(await on_postgres(postgres, turns, seed, runs, checks))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=1_000_000, help="turns to fill (1000000)")
    parser.add_argument("--postgres", metavar="URL", help="also on a fresh schema there")
    parser.add_argument("--runs", type=int, default=5, help="times each report query runs (5)")
    parser.add_argument("--checks", type=int, default=500, help="budget checks timed (500)")
    args = parser.parse_args()
    results = asyncio.run(run(args.turns, args.postgres, runs=args.runs, checks=args.checks))
    print(table(args.turns, results))
    print(json.dumps({"bench": "usage_scale", "turns": args.turns, "results": results}))


if __name__ == "__main__":
    main()
