"""Where the embedded agent keeps its checkpoints: beside the daemon's store (design §6, §11).

With the default SQLite store they go to ``state_dir/agent.db`` (``AsyncSqliteSaver`` on its
own aiosqlite connection). With a PostgreSQL store they go to the same database and schema
(``AsyncPostgresSaver`` on a small psycopg pool, ``agent.postgres_checkpoints``), so any
replica can resume any thread and answer any clarification. A daemon on SQLite never imports
psycopg.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import aiosqlite
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from bot.config.store import StoreBackend, StoreSettings

AGENT_DB = "agent.db"


@asynccontextmanager
async def checkpointer(
    store: StoreSettings, state_dir: Path
) -> AsyncIterator[BaseCheckpointSaver[str]]:
    """A ready checkpointer for as long as the block runs."""
    async with AsyncExitStack() as stack:
        if store.backend is StoreBackend.POSTGRES and store.url is not None:
            # psycopg and its pool load only here (``agent.postgres_checkpoints``).
            from agent.postgres_checkpoints import postgres_saver  # noqa: PLC0415

            saver: BaseCheckpointSaver[str] = await postgres_saver(
                stack, store.url, store.db_schema
            )
        else:
            await asyncio.to_thread(state_dir.mkdir, parents=True, exist_ok=True)
            conn = await aiosqlite.connect(state_dir / AGENT_DB)
            stack.push_async_callback(conn.close)
            await _as_durable_as_the_store(conn)
            sqlite = AsyncSqliteSaver(conn)
            await sqlite.setup()
            saver = sqlite
        yield saver


async def _as_durable_as_the_store(conn: aiosqlite.Connection) -> None:
    """WAL with ``synchronous=NORMAL``, as the daemon's own store (``store/db.py``): a commit
    survives the process being killed at any point, and is not also fsynced on its own. The
    saver turns WAL on but leaves SQLite's default ``FULL``, which syncs the log at every
    checkpoint it writes, two or three a turn: ~7 ms of latency and ~10 % of the agent's CPU a
    turn on the development machine. Only a power loss can take back the last
    commits, of the checkpoints and of the store's journal alike."""
    cursor = await conn.execute("PRAGMA synchronous=NORMAL")
    await cursor.close()
