"""Conversation key -> agent thread (design §4), and the links from sent messages to threads.

At most one row per key is active (``ended_at IS NULL``), enforced by a partial unique index,
so two first messages racing for a new key (even from two processes) bind one thread: the
loser's insert is ignored and both read back the winner. ``rotate`` ends the active row
instead of deleting it, which keeps the old thread for history and ``topic_known``.

Every turn asks for its key's thread, so ``current`` answers from a ``RowCache`` after the
first lookup. Only this process binds and rotates threads (the CLI reads them), and it updates
the cache as it does; a change by another process still empties it.
A turn's use of its conversation (``updated_at``, for ``recent``) is recorded by the trigger
of migration 0004 when the journal marks the turn's messages running.
"""

from __future__ import annotations

import sqlite3
from typing import Final

from typing_extensions import override

from bot.errors import StoreError
from bot.messages import ConversationKey
from bot.ports import ConversationStore, LinkStore
from bot.records import Conversation, MessageLink
from store.cache import RowCache
from store.codec import to_db_time
from store.db import Database, Session
from store.rows import Columns, conversation, key_values, message_link

_SELECT: Final = "SELECT * FROM conversations"
_ACTIVE: Final = (
    f"{_SELECT} WHERE channel = ? AND account_id = ? AND chat_id = ? AND topic_id = ?"
    " AND user_id = ? AND ended_at IS NULL"
)


def _conversation(row: sqlite3.Row) -> Conversation:
    return conversation(Columns(row))


class SqliteConversationStore(ConversationStore):
    def __init__(self, db: Database) -> None:
        self._db = db
        self._known: RowCache[ConversationKey, Conversation | None] = RowCache(db)

    @override
    async def active(self, key: ConversationKey) -> Conversation | None:
        row = await self._db.row(_ACTIVE, key_values(key))
        return None if row is None else _conversation(row)

    @override
    async def current(self, key: ConversationKey) -> Conversation | None:
        return await self._known.lookup(key, lambda: self.active(key))

    @override
    async def bind(self, key: ConversationKey, thread_id: str) -> Conversation:
        self._known.invalidate(key)
        async with self._db.transaction() as tx:
            await self._insert(tx, key, thread_id)
            bound = await self._active_in(tx, key)
        self._known.put(key, bound)
        return bound

    @override
    async def rotate(self, key: ConversationKey, thread_id: str) -> Conversation:
        self._known.invalidate(key)
        now = to_db_time(self._db.now())
        async with self._db.transaction() as tx:
            await tx.execute(
                "UPDATE conversations SET ended_at = ?, updated_at = ?"
                " WHERE channel = ? AND account_id = ? AND chat_id = ? AND topic_id = ?"
                " AND user_id = ? AND ended_at IS NULL",
                (now, now, *key_values(key)),
            )
            await self._insert(tx, key, thread_id)
            rotated = await self._active_in(tx, key)
        self._known.put(key, rotated)
        return rotated

    async def _insert(self, tx: Session, key: ConversationKey, thread_id: str) -> None:
        """Start a thread for the key unless it already has an active one."""
        now = to_db_time(self._db.now())
        await tx.execute(
            "INSERT OR IGNORE INTO conversations (channel, account_id, chat_id, topic_id, user_id,"
            " thread_id, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (*key_values(key), thread_id, now, now),
        )

    async def _active_in(self, tx: Session, key: ConversationKey) -> Conversation:
        row = await tx.row(_ACTIVE, key_values(key))
        if row is None:
            raise StoreError(f"no active conversation for {key.describe()} after writing one")
        return _conversation(row)

    @override
    async def topic_known(self, key: ConversationKey) -> bool:
        row = await self._db.row(
            "SELECT 1 FROM conversations WHERE channel = ? AND account_id = ? AND chat_id = ?"
            " AND topic_id = ? AND user_id = ? LIMIT 1",
            key_values(key),
        )
        return row is not None

    @override
    async def recent(self, *, channel: str | None = None, limit: int = 50) -> list[Conversation]:
        """Active conversations, most recently used first."""
        order = "ORDER BY updated_at DESC, id DESC LIMIT ?"
        if channel is None:
            rows = await self._db.rows(f"{_SELECT} WHERE ended_at IS NULL {order}", (limit,))
        else:
            rows = await self._db.rows(
                f"{_SELECT} WHERE ended_at IS NULL AND channel = ? {order}", (channel, limit)
            )
        return [_conversation(row) for row in rows]

    @override
    async def count(self) -> int:
        row = await self._db.row("SELECT COUNT(*) FROM conversations WHERE ended_at IS NULL")
        return 0 if row is None else int(row[0])


class SqliteLinkStore(LinkStore):
    def __init__(self, db: Database) -> None:
        self._db = db

    @override
    async def lookup(
        self, channel: str, account_id: str, chat_id: str, message_id: str
    ) -> MessageLink | None:
        row = await self._db.row(
            "SELECT * FROM message_links"
            " WHERE channel = ? AND account_id = ? AND chat_id = ? AND message_id = ?",
            (channel, account_id, chat_id, message_id),
        )
        return None if row is None else message_link(Columns(row))
