"""Pending questions the agent asked (design §7), on PostgreSQL (``store.clarifications``).

State changes are conditional updates (``WHERE state = 'pending'``), so an answer arriving
twice, on one replica or two, or an answer racing the expiry sweep, changes the row once.
``expire_due`` is one ``UPDATE ... RETURNING``, so two sweeps never both report a question.
Ties in ``created_at`` fall back to ``seq``, the order questions were recorded in.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from typing_extensions import override

from bot.messages import ConversationKey
from bot.ports import ClarificationStore
from bot.records import Clarification, ClarificationState
from store.codec import to_utc
from store.postgres.db import PgDatabase
from store.postgres.rows import PgColumns
from store.rows import clarification, key_values

_SELECT: Final = "SELECT * FROM clarifications"
_OLDEST_FIRST: Final = "ORDER BY created_at, seq"
_KEY: Final = "channel = %s AND account_id = %s AND chat_id = %s AND topic_id = %s AND user_id = %s"


class PgClarificationStore(ClarificationStore):
    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    @override
    async def add(self, clarification: Clarification) -> None:
        c = clarification
        await self._db.execute(
            "INSERT INTO clarifications (id, channel, account_id, chat_id, topic_id, user_id,"
            " chat_type, thread_id, asked_user_id, question, options, question_message_id,"
            " created_at, expires_at, state, answer)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::text[], %s, %s, %s, %s, %s)",
            (
                c.id, *key_values(c.key), c.chat_type, c.thread_id, c.asked_user_id, c.question,
                list(c.options), c.question_message_id, to_utc(c.created_at),
                to_utc(c.expires_at), c.state, c.answer,
            ),
        )  # fmt: skip

    @override
    async def set_question_message(self, clarification_id: str, message_id: str) -> None:
        await self._db.execute(
            "UPDATE clarifications SET question_message_id = %s WHERE id = %s",
            (message_id, clarification_id),
        )

    @override
    async def get(self, clarification_id: str) -> Clarification | None:
        row = await self._db.row(f"{_SELECT} WHERE id = %s", (clarification_id,))
        return None if row is None else clarification(PgColumns(row))

    @override
    async def pending_for_user(
        self, channel: str, account_id: str, chat_id: str, user_id: str, now: datetime
    ) -> list[Clarification]:
        rows = await self._db.rows(
            f"{_SELECT} WHERE channel = %s AND account_id = %s AND chat_id = %s"
            " AND asked_user_id = %s AND state = 'pending' AND expires_at > %s"
            f" {_OLDEST_FIRST}",
            (channel, account_id, chat_id, user_id, to_utc(now)),
        )
        return [clarification(PgColumns(row)) for row in rows]

    @override
    async def pending_for_key(self, key: ConversationKey) -> list[Clarification]:
        """Pending questions of a conversation, expired or not (the sweep decides that)."""
        rows = await self._db.rows(
            f"{_SELECT} WHERE {_KEY} AND state = 'pending' {_OLDEST_FIRST}", key_values(key)
        )
        return [clarification(PgColumns(row)) for row in rows]

    @override
    async def by_question_message(
        self, channel: str, account_id: str, chat_id: str, message_id: str
    ) -> Clarification | None:
        """The question posted as that message, in any state (the caller checks it)."""
        row = await self._db.row(
            f"{_SELECT} WHERE channel = %s AND account_id = %s AND chat_id = %s"
            " AND question_message_id = %s ORDER BY created_at DESC, seq DESC LIMIT 1",
            (channel, account_id, chat_id, message_id),
        )
        return None if row is None else clarification(PgColumns(row))

    @override
    async def resolve(self, clarification_id: str, answer: str) -> bool:
        """Pending -> answered, once. Expiry is the caller's check (``pending_for_user``)
        and the sweep's; this store does not consult a clock of its own here."""
        resolved = await self._db.row(
            "UPDATE clarifications SET state = %s, answer = %s"
            " WHERE id = %s AND state = 'pending' RETURNING id",
            (ClarificationState.ANSWERED, answer, clarification_id),
        )
        return resolved is not None

    @override
    async def cancel_for_key(self, key: ConversationKey) -> int:
        return await self._db.write(
            "UPDATE clarifications SET state = %s WHERE channel = %s AND account_id = %s"
            " AND chat_id = %s AND topic_id = %s AND user_id = %s AND state = 'pending'",
            (ClarificationState.CANCELLED, *key_values(key)),
        )

    @override
    async def expire_due(self, now: datetime) -> list[Clarification]:
        """Move pending questions past their expiry to expired; returns them, oldest first."""
        rows = await self._db.rows(
            "WITH expired AS (UPDATE clarifications SET state = %s"
            " WHERE state = 'pending' AND expires_at <= %s RETURNING *)"
            " SELECT * FROM expired ORDER BY created_at, seq",
            (ClarificationState.EXPIRED, to_utc(now)),
        )
        return [clarification(PgColumns(row)) for row in rows]
