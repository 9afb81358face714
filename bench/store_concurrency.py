"""The SQLite store under concurrent chats: what a message's journal costs when many
chats write at once.

Each simulated chat runs the journal's part of a turn for M messages in a row on the real
``SqliteStore``: record the message (the dedupe insert), mark it running, mark it handled —
three statements, each awaited before the next, as the pipeline does. With one chat every
statement is a round trip of its own; with N chats, statements issued in the same loop
iteration reach SQLite together and commit as one transaction (``store/writer.py``). Reported
per concurrency: statements per second and the process's CPU time (loop and writer thread) per
statement. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.store_scale import message  # noqa: E402
from bot.records import InboundStatus  # noqa: E402
from store.sqlite import SqliteStore  # noqa: E402

STATEMENTS_PER_MESSAGE = 3


async def _chat(store: SqliteStore, chat: int, messages: int) -> None:
    for index in range(messages):
        n = chat * 1_000_000 + index
        [entry] = await store.inbound.record_many([(message(n), f"bench-{n}")])
        assert entry is not None  # every message is new
        await store.inbound.update(entry, InboundStatus.RUNNING)
        await store.inbound.update(entry, InboundStatus.HANDLED)


async def measure(path: Path, chats: int, messages: int) -> dict[str, float]:
    async with SqliteStore(path) as store:
        await _chat(store, chats + 1, 5)  # warm-up: caches, prepared statements
        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.gather(*(_chat(store, chat, messages) for chat in range(chats)))
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    statements = chats * messages * STATEMENTS_PER_MESSAGE
    return {
        "chats": chats,
        "statements": statements,
        "statements_per_s": round(statements / wall),
        "cpu_us_per_statement": round(1e6 * cpu / statements, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chats", type=int, nargs="+", default=[1, 20])
    parser.add_argument("--statements", type=int, default=6000, help="per concurrency level")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as state:
        for chats in args.chats:
            messages = max(1, args.statements // (STATEMENTS_PER_MESSAGE * chats))
            path = Path(state) / f"chats-{chats}.db"
            results.append(asyncio.run(measure(path, chats, messages)))
    print(json.dumps({"bench": "store_concurrency", "runs": results}))


if __name__ == "__main__":
    main()
