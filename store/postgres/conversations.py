"""Conversation key -> agent thread on PostgreSQL, and links from sent messages to threads.

As in SQLite (``store.conversations``), a partial unique index keeps at most one active row
per key, and ``current`` answers from a ``RowCache``. Binding is one ``INSERT ... ON CONFLICT
DO NOTHING RETURNING``; when it finds the key bound already (by this process or another
replica) it reads the winner back in a second statement, whose fresh snapshot sees a row
committed while the insert waited for it.

``rotate`` ends the active row and inserts the new one in one transaction. If another rotate
of the key committed in between, the insert conflicts with that one's new row: the rotate then
ends that row too and tries again, so concurrent rotates take turns, as SQLite's do.
"""

from __future__ import annotations

from typing import Final

from typing_extensions import override

from bot.errors import StoreBusy
from bot.messages import ConversationKey
from bot.ports import ConversationStore, LinkStore
from bot.records import Conversation, MessageLink
from store.cache import RowCache
from store.codec import to_utc
from store.postgres.db import PgDatabase, PgSession
from store.postgres.rows import PgColumns
from store.rows import conversation, key_values, message_link

_SELECT: Final = "SELECT * FROM conversations"
_KEY: Final = "channel = %s AND account_id = %s AND chat_id = %s AND topic_id = %s AND user_id = %s"
_ACTIVE: Final = f"{_SELECT} WHERE {_KEY} AND ended_at IS NULL"
_INSERT: Final = (
    "INSERT INTO conversations (channel, account_id, chat_id, topic_id, user_id, thread_id,"
    " created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
    " ON CONFLICT (channel, account_id, chat_id, topic_id, user_id) WHERE ended_at IS NULL"
    " DO NOTHING RETURNING *"
)
ROTATE_TRIES: Final = 10
"""Rotates of one key racing this one that it lets go first before giving up (``StoreBusy``)."""


class PgConversationStore(ConversationStore):
    def __init__(self, db: PgDatabase) -> None:
        self._db = db
        self._known: RowCache[ConversationKey, Conversation | None] = RowCache(db)

    @override
    async def active(self, key: ConversationKey) -> Conversation | None:
        row = await self._db.row(_ACTIVE, key_values(key))
        return None if row is None else conversation(PgColumns(row))

    @override
    async def current(self, key: ConversationKey) -> Conversation | None:
        return await self._known.lookup(key, lambda: self.active(key))

    @override
    async def bind(self, key: ConversationKey, thread_id: str) -> Conversation:
        self._known.invalidate(key)
        async with self._db.shared() as session:
            bound = await self._insert(session, key, thread_id)
            if bound is None:
                bound = await self._active_in(session, key)
        self._known.put(key, bound)
        return bound

    @override
    async def rotate(self, key: ConversationKey, thread_id: str) -> Conversation:
        self._known.invalidate(key)
        now = to_utc(self._db.now())
        async with self._db.transaction() as tx:
            for _ in range(ROTATE_TRIES):
                await tx.execute(
                    "UPDATE conversations SET ended_at = %s, updated_at = %s WHERE channel = %s"
                    " AND account_id = %s AND chat_id = %s AND topic_id = %s AND user_id = %s"
                    " AND ended_at IS NULL",
                    (now, now, *key_values(key)),
                )
                rotated = await self._insert(tx, key, thread_id)
                if rotated is not None:
                    break
            else:
                raise StoreBusy(f"store {self._db.where}: {key.describe()} kept being rotated")
        self._known.put(key, rotated)
        return rotated

    async def _insert(
        self, session: PgSession, key: ConversationKey, thread_id: str
    ) -> Conversation | None:
        """Start a thread for the key unless it has an active one (then ``None``)."""
        now = to_utc(self._db.now())
        row = await session.row(_INSERT, (*key_values(key), thread_id, now, now))
        return None if row is None else conversation(PgColumns(row))

    async def _active_in(self, session: PgSession, key: ConversationKey) -> Conversation:
        found = await session.row(_ACTIVE, key_values(key))
        if found is None:
            raise StoreBusy(
                f"store {self._db.where}: {key.describe()} had an active conversation that"
                " ended before it could be read"
            )
        return conversation(PgColumns(found))

    @override
    async def topic_known(self, key: ConversationKey) -> bool:
        row = await self._db.row(
            "SELECT 1 FROM conversations WHERE channel = %s AND account_id = %s"
            " AND chat_id = %s AND topic_id = %s AND user_id = %s LIMIT 1",
            key_values(key),
        )
        return row is not None

    @override
    async def recent(self, *, channel: str | None = None, limit: int = 50) -> list[Conversation]:
        """Active conversations, most recently used first."""
        order = "ORDER BY updated_at DESC, id DESC LIMIT %s"
        if channel is None:
            rows = await self._db.rows(f"{_SELECT} WHERE ended_at IS NULL {order}", (limit,))
        else:
            rows = await self._db.rows(
                f"{_SELECT} WHERE ended_at IS NULL AND channel = %s {order}", (channel, limit)
            )
        return [conversation(PgColumns(row)) for row in rows]

    @override
    async def count(self) -> int:
        row = await self._db.row("SELECT COUNT(*) AS n FROM conversations WHERE ended_at IS NULL")
        return 0 if row is None else PgColumns(row).integer("n")


class PgLinkStore(LinkStore):
    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    @override
    async def lookup(
        self, channel: str, account_id: str, chat_id: str, message_id: str
    ) -> MessageLink | None:
        row = await self._db.row(
            "SELECT * FROM message_links"
            " WHERE channel = %s AND account_id = %s AND chat_id = %s AND message_id = %s",
            (channel, account_id, chat_id, message_id),
        )
        return None if row is None else message_link(PgColumns(row))
