"""Pending questions the agent asked (design §7); they survive a restart.

State changes are conditional updates (``WHERE state = 'pending'``), so an answer arriving
twice, on one replica or two, or an answer racing the expiry sweep, changes the row once.
``expire_due`` is one ``UPDATE ... RETURNING``, so two sweeps never both report a question.
Queries that the partial indexes should serve spell ``'pending'`` literally, which SQLite needs
to match the index. Ties in ``created_at`` fall back to the order questions were recorded in
(the dialect's ``seq``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from typing_extensions import override

from bot.messages import ConversationKey
from bot.ports import ClarificationStore
from bot.records import Clarification, ClarificationState
from store.dialect import Backend
from store.rows import KEY_MATCH, Columns, Row, clarification, key_values

_SELECT: Final = "SELECT * FROM clarifications"


class SqlClarificationStore(ClarificationStore):
    def __init__(self, db: Backend) -> None:
        self._db = db
        self._time = db.dialect.time
        self._oldest_first = f"ORDER BY created_at, {db.dialect.seq}"

    def _clarification(self, row: Row) -> Clarification:
        return clarification(self._db.dialect.columns(row))

    @override
    async def add(self, clarification: Clarification) -> None:
        c, dialect = clarification, self._db.dialect
        await self._db.execute(
            "INSERT INTO clarifications (id, channel, account_id, chat_id, topic_id, user_id,"  # noqa: S608 - fragments, not values
            " chat_type, thread_id, asked_user_id, question, options, question_message_id,"
            " created_at, expires_at, state, answer)"
            f" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, {dialect.strings}, ?, ?, ?, ?, ?)",
            (
                c.id,
                *key_values(c.key),
                c.chat_type,
                c.thread_id,
                c.asked_user_id,
                c.question,
                dialect.array(c.options),
                c.question_message_id,
                self._time(c.created_at),
                self._time(c.expires_at),
                c.state,
                c.answer,
            ),
        )

    @override
    async def set_question_message(self, clarification_id: str, message_id: str) -> None:
        await self._db.execute(
            "UPDATE clarifications SET question_message_id = ? WHERE id = ?",
            (message_id, clarification_id),
        )

    @override
    async def get(self, clarification_id: str) -> Clarification | None:
        row = await self._db.row(f"{_SELECT} WHERE id = ?", (clarification_id,))
        return None if row is None else self._clarification(row)

    @override
    async def pending_for_user(
        self, channel: str, account_id: str, chat_id: str, user_id: str, now: datetime
    ) -> list[Clarification]:
        rows = await self._db.rows(
            f"{_SELECT} WHERE channel = ? AND account_id = ? AND chat_id = ?"
            " AND asked_user_id = ? AND state = 'pending' AND expires_at > ?"
            f" {self._oldest_first}",
            (channel, account_id, chat_id, user_id, self._time(now)),
        )
        return [self._clarification(row) for row in rows]

    @override
    async def pending_for_key(self, key: ConversationKey) -> list[Clarification]:
        """Pending questions of a conversation, expired or not (the sweep decides that)."""
        rows = await self._db.rows(
            f"{_SELECT} WHERE {KEY_MATCH} AND state = 'pending' {self._oldest_first}",
            key_values(key),
        )
        return [self._clarification(row) for row in rows]

    @override
    async def by_question_message(
        self, channel: str, account_id: str, chat_id: str, message_id: str
    ) -> Clarification | None:
        """The question posted as that message, in any state (the caller checks it)."""
        row = await self._db.row(
            f"{_SELECT} WHERE channel = ? AND account_id = ? AND chat_id = ?"
            f" AND question_message_id = ? ORDER BY created_at DESC, {self._db.dialect.seq} DESC"
            " LIMIT 1",
            (channel, account_id, chat_id, message_id),
        )
        return None if row is None else self._clarification(row)

    @override
    async def resolve(self, clarification_id: str, answer: str) -> bool:
        """Pending -> answered, once. Expiry is the caller's check (``pending_for_user``)
        and the sweep's; this store does not consult a clock of its own here."""
        resolved = await self._db.row(
            "UPDATE clarifications SET state = ?, answer = ?"
            " WHERE id = ? AND state = 'pending' RETURNING id",
            (ClarificationState.ANSWERED, answer, clarification_id),
        )
        return resolved is not None

    @override
    async def cancel_for_key(self, key: ConversationKey) -> int:
        return await self._db.write(
            f"UPDATE clarifications SET state = ? WHERE {KEY_MATCH} AND state = 'pending'",  # noqa: S608 - fragments, not values
            (ClarificationState.CANCELLED, *key_values(key)),
        )

    @override
    async def cancel(self, clarification_id: str) -> bool:
        cancelled = await self._db.row(
            "UPDATE clarifications SET state = ? WHERE id = ? AND state = 'pending' RETURNING id",
            (ClarificationState.CANCELLED, clarification_id),
        )
        return cancelled is not None

    @override
    async def expire_due(self, now: datetime) -> list[Clarification]:
        """Move pending questions past their expiry to expired; returns them, oldest first
        (sorted here: neither engine promises an order for what RETURNING returns)."""
        rows = await self._db.rows(
            f"UPDATE clarifications SET state = ? WHERE state = 'pending' AND expires_at <= ?"  # noqa: S608 - fragments, not values
            f" RETURNING *, {self._db.dialect.seq} AS recorded",
            (ClarificationState.EXPIRED, self._time(now)),
        )
        expired = [self._db.dialect.columns(row) for row in rows]
        expired.sort(key=_oldest_first)
        return [clarification(cols) for cols in expired]


def _oldest_first(cols: Columns) -> tuple[datetime, int]:
    return cols.at("created_at"), cols.integer("recorded")
