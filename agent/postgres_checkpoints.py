"""The embedded agent's checkpoints in PostgreSQL: the saver beside a PostgreSQL store, and
``switchboard store copy``'s move of them out of SQLite (design §6, §11).

A module of its own so that a daemon on SQLite never loads psycopg, its pool and the
PostgreSQL saver (about 10 MB): ``agent.checkpoints`` imports it only for a PostgreSQL store.
The saver's ``setup`` (its migrations) is not safe to run from two processes at once, so
replicas take turns under an advisory lock.
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiosqlite
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from psycopg import AsyncConnection, sql
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool

POOL_MAX = 4
SETUP_WAIT_S = 60.0
LOCK_POLL_S = 0.05


async def postgres_saver(stack: AsyncExitStack, url: str, schema: str) -> AsyncPostgresSaver:
    """A set-up saver in ``schema`` on a small pool that ``stack`` closes; replicas set up
    one at a time."""
    options = f"-c search_path={schema}"
    async with await AsyncConnection.connect(url, autocommit=True, options=options) as conn:
        lock = f"switchboard-checkpoints:{schema}"
        await _take_turn(conn, lock)
        try:
            create = sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema))
            await conn.execute(create)  # racing replicas would collide without the lock
            pool: AsyncConnectionPool[AsyncConnection[DictRow]] = AsyncConnectionPool(
                url,
                min_size=1,
                max_size=POOL_MAX,
                open=False,
                kwargs={
                    "autocommit": True,
                    "prepare_threshold": 0,
                    "row_factory": dict_row,
                    "options": options,
                },
            )
            await pool.open(wait=True)
            stack.push_async_callback(pool.close)
            saver = AsyncPostgresSaver(pool)
            await saver.setup()
        finally:
            await conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (lock,))
    return saver


async def _take_turn(conn: AsyncConnection[tuple[object, ...]], lock: str) -> None:
    """Wait for the advisory lock without a statement blocked inside the server: the saver's
    setup runs ``CREATE INDEX CONCURRENTLY``, which waits for every open transaction, a
    waiting ``pg_advisory_lock`` call included, and the two would wait for each other."""
    async with asyncio.timeout(SETUP_WAIT_S):
        while True:
            cursor = await conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (lock,))
            row = await cursor.fetchone()
            if row is not None and row[0]:
                return
            await asyncio.sleep(LOCK_POLL_S)


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointsCopied:
    threads: int
    checkpoints: int
    writes: int


async def copy_checkpoints(agent_db: Path, url: str, schema: str) -> CheckpointsCopied:
    """Copy every thread's checkpoints (and their pending writes) from the SQLite saver in
    ``agent_db`` into the PostgreSQL saver of ``schema`` (``switchboard store copy``), oldest
    first, so each keeps its parent. The target must hold no checkpoints yet (``ValueError``
    naming it otherwise); a missing ``agent_db`` copies nothing."""
    if not await asyncio.to_thread(agent_db.is_file):
        return CheckpointsCopied(threads=0, checkpoints=0, writes=0)
    async with AsyncExitStack() as stack:
        conn = await aiosqlite.connect(agent_db)
        stack.push_async_callback(conn.close)
        source = AsyncSqliteSaver(conn)
        target = await postgres_saver(stack, url, schema)
        async for _held in target.alist(None, limit=1):
            raise ValueError(
                f"the PostgreSQL schema {schema!r} holds agent checkpoints already;"
                " they are copied only into an empty one"
            )
        # Checkpoint ids are time-ordered (uuid6): reversed, the newest-first list is oldest first.
        saved = [found async for found in source.alist(None)]
        threads: set[str] = set()
        writes = 0
        for found in reversed(saved):
            configurable = found.config["configurable"]
            parent = (found.parent_config or {}).get("configurable", {}).get("checkpoint_id")
            config: RunnableConfig = {
                "configurable": {
                    "thread_id": configurable["thread_id"],
                    "checkpoint_ns": configurable.get("checkpoint_ns", ""),
                    **({"checkpoint_id": parent} if parent else {}),
                }
            }
            stored = await target.aput(
                config,
                found.checkpoint,
                found.metadata,
                dict(found.checkpoint["channel_versions"]),
            )
            by_task: dict[str, list[tuple[str, Any]]] = {}
            for task_id, channel, value in found.pending_writes or ():
                by_task.setdefault(task_id, []).append((channel, value))
            for task_id, task_writes in by_task.items():
                await target.aput_writes(stored, task_writes, task_id)
                writes += len(task_writes)
            threads.add(str(configurable["thread_id"]))
    return CheckpointsCopied(threads=len(threads), checkpoints=len(saved), writes=writes)
