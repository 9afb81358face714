"""Pending questions the agent asked (design §7); they survive a restart.

State changes are conditional updates (``WHERE state = 'pending'``), so an answer arriving
twice, or an answer racing the expiry sweep, changes the row once. Queries that the partial
indexes should serve spell ``'pending'`` literally, which SQLite needs to match the index.
"""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from datetime import datetime
from typing import Final

from typing_extensions import override

from bot.messages import ConversationKey
from bot.ports import ClarificationStore
from bot.records import Clarification, ClarificationState
from store.codec import encode_strings, to_db_time
from store.db import Database
from store.rows import Columns, clarification, key_values

_SELECT: Final = "SELECT * FROM clarifications"
_OLDEST_FIRST: Final = "ORDER BY created_at, rowid"


def _clarification(row: sqlite3.Row) -> Clarification:
    return clarification(Columns(row))


class SqliteClarificationStore(ClarificationStore):
    def __init__(self, db: Database) -> None:
        self._db = db

    @override
    async def add(self, clarification: Clarification) -> None:
        c = clarification
        await self._db.execute(
            "INSERT INTO clarifications (id, channel, account_id, chat_id, topic_id, user_id,"
            " chat_type, thread_id, asked_user_id, question,"
            " options, question_message_id, created_at, expires_at, state, answer)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                c.id,
                *key_values(c.key),
                c.chat_type,
                c.thread_id,
                c.asked_user_id,
                c.question,
                encode_strings(c.options),
                c.question_message_id,
                to_db_time(c.created_at),
                to_db_time(c.expires_at),
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
        return None if row is None else _clarification(row)

    @override
    async def pending_for_user(
        self, channel: str, account_id: str, chat_id: str, user_id: str, now: datetime
    ) -> list[Clarification]:
        rows = await self._db.rows(
            f"{_SELECT} WHERE channel = ? AND account_id = ? AND chat_id = ?"
            " AND asked_user_id = ? AND state = 'pending' AND expires_at > ?"
            f" {_OLDEST_FIRST}",
            (channel, account_id, chat_id, user_id, to_db_time(now)),
        )
        return [_clarification(row) for row in rows]

    @override
    async def pending_for_key(self, key: ConversationKey) -> list[Clarification]:
        """Pending questions of a conversation, expired or not (the sweep decides that)."""
        rows = await self._db.rows(
            f"{_SELECT} WHERE channel = ? AND account_id = ? AND chat_id = ? AND topic_id = ?"
            f" AND user_id = ? AND state = 'pending' {_OLDEST_FIRST}",
            key_values(key),
        )
        return [_clarification(row) for row in rows]

    @override
    async def by_question_message(
        self, channel: str, account_id: str, chat_id: str, message_id: str
    ) -> Clarification | None:
        """The question posted as that message, in any state (the caller checks it)."""
        row = await self._db.row(
            f"{_SELECT} WHERE channel = ? AND account_id = ? AND chat_id = ?"
            " AND question_message_id = ? ORDER BY created_at DESC, rowid DESC LIMIT 1",
            (channel, account_id, chat_id, message_id),
        )
        return None if row is None else _clarification(row)

    @override
    async def resolve(self, clarification_id: str, answer: str) -> bool:
        """Pending -> answered, once. Expiry is the caller's check (``pending_for_user``)
        and the sweep's; this store does not consult a clock of its own here."""
        resolved = await self._db.row(
            "UPDATE clarifications SET state = ?, answer = ? WHERE id = ? AND state = 'pending'"
            " RETURNING id",
            (ClarificationState.ANSWERED, answer, clarification_id),
        )
        return resolved is not None

    @override
    async def cancel_for_key(self, key: ConversationKey) -> int:
        written = await self._db.write(
            "UPDATE clarifications SET state = ?"
            " WHERE channel = ? AND account_id = ? AND chat_id = ? AND topic_id = ? AND user_id = ?"
            " AND state = 'pending'",
            (ClarificationState.CANCELLED, *key_values(key)),
        )
        return written.rowcount

    @override
    async def expire_due(self, now: datetime) -> list[Clarification]:
        """Move pending questions past their expiry to expired; returns them, oldest first."""
        async with self._db.transaction() as tx:
            rows = await tx.rows(
                f"{_SELECT} WHERE state = 'pending' AND expires_at <= ? {_OLDEST_FIRST}",
                (to_db_time(now),),
            )
            await tx.execute(
                "UPDATE clarifications SET state = ? WHERE state = 'pending' AND expires_at <= ?",
                (ClarificationState.EXPIRED, to_db_time(now)),
            )
        return [replace(_clarification(row), state=ClarificationState.EXPIRED) for row in rows]
