"""Store cost as it grows (design §16): thread lookup and journal write at 10⁴ vs 10⁶ rows.

For each size a fresh store file is migrated by ``SqliteStore`` and filled in bulk with that
many conversations and inbound journal entries (spelled by the store's own codec, written
with plain ``sqlite3`` in one transaction, so filling 10⁶ rows takes seconds, not minutes).
Then, on the real ``SqliteStore``:

- thread lookup: ``conversations.active(key)`` for random known keys — the read a turn does
  the first time this process meets a key (after that ``current`` answers from memory);
- journal write: ``inbound.record`` of a new message — the dedupe insert every inbound message
  costs, through the unique index and the three others on the journal.

Each is timed one operation at a time (median and p99 in microseconds). Prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bot.messages import ChatType, ConversationKey, InboundMessage, Sender  # noqa: E402
from bot.records import InboundStatus  # noqa: E402
from store.codec import encode_inbound, to_db_time  # noqa: E402
from store.sqlite import DB_FILENAME, SqliteStore  # noqa: E402

SIZES = (10_000, 1_000_000)
BATCH = 50_000
CHANNEL = "telegram"


def message(n: int) -> InboundMessage:
    return InboundMessage(
        channel=CHANNEL,
        chat_id=f"chat-{n}",
        chat_type=ChatType.DM,
        message_id=str(n),
        sender=Sender(id=f"user-{n}", display_name="Load"),
        text=f"message number {n}, about as long as a short chat line",
    )


def _conversations(size: int, stamp: str) -> Iterator[tuple[str, ...]]:
    for n in range(size):
        yield (CHANNEL, "", f"chat-{n}", "", "", f"thread-{n}", stamp, stamp)


def _journal(size: int, stamp: str) -> Iterator[tuple[str | int, ...]]:
    for n in range(size):
        encoded = encode_inbound(message(n))
        yield (CHANNEL, "", f"chat-{n}", str(n), encoded, f"corr-{n}",
               InboundStatus.HANDLED, stamp, stamp)  # fmt: skip


def fill(path: Path, size: int) -> None:
    """``size`` conversations and ``size`` handled journal entries, in one transaction."""
    stamp = to_db_time(datetime.now(UTC))
    with sqlite3.connect(path, isolation_level=None) as conn:
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO conversations (channel, account_id, chat_id, topic_id, user_id,"
            " thread_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            _conversations(size, stamp),
        )
        conn.executemany(
            "INSERT INTO inbound (channel, account_id, chat_id, message_id, message,"
            " correlation_id, status, recorded_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            _journal(size, stamp),
        )
        conn.execute("COMMIT")
    conn.close()


async def timed(operations: int, operation: Callable[[int], Awaitable[object]]) -> dict[str, float]:
    """Median and p99 microseconds of ``operation(n)``, one at a time."""
    for n in range(min(100, operations)):  # warm the page cache and statement cache
        await operation(-n - 1)
    samples: list[float] = []
    for n in range(operations):
        started = time.perf_counter()
        await operation(n)
        samples.append((time.perf_counter() - started) * 1e6)
    samples.sort()
    p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))]
    return {"p50_us": round(statistics.median(samples), 1), "p99_us": round(p99, 1)}


async def measure(state: Path, size: int, operations: int) -> dict[str, object]:
    path = state / f"size-{size}" / DB_FILENAME
    async with SqliteStore(path):  # creates the file and its schema
        pass
    started = time.monotonic()
    await asyncio.to_thread(fill, path, size)
    fill_s = time.monotonic() - started
    rng = random.Random(size)  # noqa: S311 - picking keys, not secrets
    async with SqliteStore(path) as store:

        async def lookup(_: int) -> object:
            chat = f"chat-{rng.randrange(size)}"
            return await store.conversations.active(
                ConversationKey(channel=CHANNEL, account_id="", chat_id=chat)
            )

        async def record(n: int) -> object:
            fresh = message(size + 1_000_000 + n) if n >= 0 else message(size + 10 - n)
            return await store.inbound.record_many([(fresh, f"bench-{n}")])

        lookups = await timed(operations, lookup)
        writes = await timed(operations, record)
    megabytes = sum(f.stat().st_size for f in path.parent.iterdir()) / 1e6
    return {
        "rows": size, "fill_s": round(fill_s, 1), "db_mb": round(megabytes, 1),
        "thread_lookup": lookups, "journal_write": writes,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--operations", type=int, default=2000, help="timed per measurement")
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=list(SIZES), help="rows of each table"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as state:
        results = [asyncio.run(measure(Path(state), size, args.operations)) for size in args.sizes]
    print(json.dumps({"bench": "store_scale", "operations": args.operations, "sizes": results}))


if __name__ == "__main__":
    main()
