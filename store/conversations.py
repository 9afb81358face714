"""Conversation key -> agent thread (design §4), and the links from sent messages to threads.

At most one row per key is active (``ended_at IS NULL``), enforced by a partial unique index,
so two first messages racing for a new key (even from two processes or replicas) bind one
thread: the loser's ``INSERT ... ON CONFLICT DO NOTHING`` returns nothing, and it reads the
winner back. ``rotate`` ends the active row instead of deleting it, which keeps the old thread
for history and ``topic_known``. If another rotate of the key committed in between (only
PostgreSQL lets two run at once), the insert conflicts with that one's new row: the rotate
then ends that row too and tries again, so concurrent rotates take turns.

Every turn asks for its key's thread, so ``current`` answers from a ``RowCache`` after the
first lookup, updated as this process binds and rotates; a change by another process still
empties it. A turn's use of its conversation (``updated_at``, for ``recent``) is recorded by a
trigger when the journal marks the turn's messages running.
"""

from __future__ import annotations

from typing import Final

from typing_extensions import override

from bot.errors import StoreBusy
from bot.messages import ConversationKey
from bot.ports import ConversationStore, LinkStore
from bot.records import Conversation, MessageLink
from store.cache import RowCache
from store.dialect import Backend, Session
from store.rows import KEY_MATCH, Row, conversation, key_values, message_link

_SELECT: Final = "SELECT * FROM conversations"
_ACTIVE: Final = f"{_SELECT} WHERE {KEY_MATCH} AND ended_at IS NULL"
_INSERT: Final = (
    "INSERT INTO conversations (channel, account_id, chat_id, topic_id, user_id, thread_id,"
    " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (channel, account_id, chat_id, topic_id, user_id) WHERE ended_at IS NULL"
    " DO NOTHING RETURNING *"
)
ROTATE_TRIES: Final = 10
"""Rotates of one key racing this one that it lets go first before giving up (``StoreBusy``)."""


class SqlConversationStore(ConversationStore):
    def __init__(self, db: Backend) -> None:
        self._db = db
        self._known: RowCache[ConversationKey, Conversation | None] = RowCache(db)

    def _conversation(self, row: Row) -> Conversation:
        return conversation(self._db.dialect.columns(row))

    @override
    async def active(self, key: ConversationKey) -> Conversation | None:
        row = await self._db.row(_ACTIVE, key_values(key))
        return None if row is None else self._conversation(row)

    @override
    async def current(self, key: ConversationKey) -> Conversation | None:
        return await self._known.lookup(key, lambda: self.active(key))

    @override
    async def bind(self, key: ConversationKey, thread_id: str) -> Conversation:
        self._known.invalidate(key)
        async with self._db.transaction() as tx:
            bound = await self._insert(tx, key, thread_id)
            if bound is None:
                bound = await self._active_in(tx, key)
        self._known.put(key, bound)
        return bound

    @override
    async def rotate(self, key: ConversationKey, thread_id: str) -> Conversation:
        self._known.invalidate(key)
        now = self._db.dialect.time(self._db.now())
        async with self._db.transaction() as tx:
            for _ in range(ROTATE_TRIES):
                await tx.execute(
                    f"UPDATE conversations SET ended_at = ?, updated_at = ? WHERE {KEY_MATCH}"  # noqa: S608 - fragments, not values
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
        self, session: Session, key: ConversationKey, thread_id: str
    ) -> Conversation | None:
        """Start a thread for the key unless it has an active one (then ``None``)."""
        now = self._db.dialect.time(self._db.now())
        row = await session.row(_INSERT, (*key_values(key), thread_id, now, now))
        return None if row is None else self._conversation(row)

    async def _active_in(self, session: Session, key: ConversationKey) -> Conversation:
        found = await session.row(_ACTIVE, key_values(key))
        if found is None:
            raise StoreBusy(
                f"store {self._db.where}: {key.describe()} had an active conversation that"
                " ended before it could be read"
            )
        return self._conversation(found)

    @override
    async def topic_known(self, key: ConversationKey) -> bool:
        row = await self._db.row(
            f"SELECT 1 FROM conversations WHERE {KEY_MATCH} LIMIT 1",  # noqa: S608 - fragments, not values
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
        return [self._conversation(row) for row in rows]

    @override
    async def count(self) -> int:
        row = await self._db.row("SELECT COUNT(*) AS n FROM conversations WHERE ended_at IS NULL")
        return 0 if row is None else self._db.dialect.columns(row).integer("n")


class SqlLinkStore(LinkStore):
    def __init__(self, db: Backend) -> None:
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
        return None if row is None else message_link(self._db.dialect.columns(row))
