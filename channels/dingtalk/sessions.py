"""Session webhooks and who asked, kept durably so replies still find them after a restart.

DingTalk hands every inbound message a ``sessionWebhook``: a URL that posts into that
conversation without a token until ``sessionWebhookExpiredTime`` (about 90 minutes). Replies
go there while it is valid (and ``at`` the asking member in groups); afterwards, and after it
answers "expired", they go through the OpenAPI. The kernel's values carry no platform details,
so this adapter keeps, per inbound message, the chat, the asker's staff id and the webhook in
a small SQLite file of its own (``<state_dir>/dingtalk-sessions.sqlite3``), written before the
callback is acked. Rows older than a day (long expired) are pruned.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import aiosqlite

SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    message_id TEXT PRIMARY KEY,
    chat_id TEXT NOT NULL,
    staff_id TEXT NOT NULL,
    webhook TEXT NOT NULL,
    expires_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_by_chat ON messages (chat_id, expires_ms);
"""
KEEP_MS = 24 * 3600 * 1000
SAFETY_MS = 60 * 1000
"""A webhook this close to its expiry is not used: the OpenAPI path is as good and surer."""
PRUNE_EVERY = 500


@dataclass(frozen=True, slots=True, kw_only=True)
class Session:
    chat_id: str
    staff_id: str
    webhook: str
    expires_ms: int


def now_ms() -> int:
    return int(time.time() * 1000)


class SessionBook:
    def __init__(self, path: Path) -> None:
        self._path = path
        self._db: aiosqlite.Connection | None = None
        self._writes = 0

    async def open(self) -> None:
        self._db = await aiosqlite.connect(self._path)
        await self._db.executescript(SCHEMA)
        await self._prune()

    async def aclose(self) -> None:
        if self._db is not None:
            db, self._db = self._db, None
            await db.close()

    def _conn(self) -> aiosqlite.Connection:
        if self._db is None:
            raise RuntimeError("the session book is not open")
        return self._db

    async def record(self, message_id: str, session: Session) -> None:
        db = self._conn()
        await db.execute(
            "INSERT OR REPLACE INTO messages VALUES (?, ?, ?, ?, ?)",
            (message_id, session.chat_id, session.staff_id, session.webhook, session.expires_ms),
        )
        await db.commit()
        self._writes += 1
        if self._writes % PRUNE_EVERY == 0:
            await self._prune()

    async def asker(self, message_id: str) -> str | None:
        """The staff id of whoever sent ``message_id``, if it is known."""
        async with self._conn().execute(
            "SELECT staff_id FROM messages WHERE message_id = ?", (message_id,)
        ) as cursor:
            row = await cursor.fetchone()
        return str(row[0]) if row else None

    async def live_webhook(self, chat_id: str) -> str | None:
        """The chat's newest session webhook that is still valid, if any."""
        async with self._conn().execute(
            "SELECT webhook FROM messages WHERE chat_id = ? AND expires_ms > ?"
            " ORDER BY expires_ms DESC LIMIT 1",
            (chat_id, now_ms() + SAFETY_MS),
        ) as cursor:
            row = await cursor.fetchone()
        return str(row[0]) if row else None

    async def expired(self, webhook: str) -> None:
        """DingTalk said this webhook is expired before its time: never use it again."""
        db = self._conn()
        await db.execute("UPDATE messages SET expires_ms = 0 WHERE webhook = ?", (webhook,))
        await db.commit()

    async def _prune(self) -> None:
        db = self._conn()
        await db.execute("DELETE FROM messages WHERE expires_ms < ?", (now_ms() - KEEP_MS,))
        await db.commit()
