"""The inbound journal: dedupe key and crash-recovery record of every accepted message.

A row is unique on (channel, account_id, chat_id, message_id). ``record_many`` is one
multi-row ``INSERT ... ON CONFLICT DO NOTHING RETURNING``, so two deliveries of one event
racing each other (or two processes, two replicas) still journal it once, and exactly one of
them learns its id.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Final

from typing_extensions import override

from bot.messages import ConversationKey, InboundMessage
from bot.ports import InboundJournal
from bot.records import UNFINISHED_INBOUND, InboundStatus, JournalEntry
from store.codec import encode_inbound
from store.dialect import Backend
from store.rows import Row, journal_entry, journaled_ids, key_values

_SELECT: Final = "SELECT * FROM inbound"
_UNFINISHED: Final = tuple(str(status) for status in UNFINISHED_INBOUND)
_ROW_PLACEHOLDERS: Final = "(?, ?, ?, ?, ?, ?, ?, ?, ?)"
_INSERT: Final = (
    "INSERT INTO inbound (channel, account_id, chat_id, message_id, message, correlation_id,"
    " status, recorded_at, updated_at) VALUES {rows}"
    " ON CONFLICT (channel, account_id, chat_id, message_id) DO NOTHING"
    " RETURNING id, channel, account_id, chat_id, message_id"
)
"""``{rows}`` is only ever placeholders, one group per entry."""
_UNFINISHED_SQL: Final = ", ".join(f"'{status}'" for status in UNFINISHED_INBOUND)
_UPDATE: Final = (
    "UPDATE inbound SET status = ?, updated_at = ?, reason = COALESCE(?, reason),"  # noqa: S608 - constant fragments; values are parameters
    " key_channel = COALESCE(?, key_channel), key_account_id = COALESCE(?, key_account_id),"
    " key_chat_id = COALESCE(?, key_chat_id), key_topic_id = COALESCE(?, key_topic_id),"
    " key_user_id = COALESCE(?, key_user_id), thread_id = COALESCE(?, thread_id) WHERE id = ?"
    f" AND (status IN ({_UNFINISHED_SQL}) OR ? NOT IN ({_UNFINISHED_SQL}))"
)
"""A finished entry stays finished: no update makes it unfinished again. A replica that lost
the chat while its store was out of reach issues its turn's marks late, after the new holder
answered; an entry reopened so would be nobody's work for good (design §11, fencing)."""


class SqlInboundJournal(InboundJournal):
    def __init__(self, db: Backend) -> None:
        self._db = db
        self._time = db.dialect.time
        self._unfinished = db.dialect.in_strings.format("status")

    def _entries(self, rows: Sequence[Row]) -> list[JournalEntry]:
        return [journal_entry(self._db.dialect.columns(row)) for row in rows]

    @override
    async def record_many(self, entries: Sequence[tuple[InboundMessage, str]]) -> list[int | None]:
        """One statement for the batch; an entry already journaled (by anyone), or repeated
        earlier in the batch, gets ``None``."""
        if not entries:
            return []
        now = self._time(self._db.now())
        params: list[object] = []
        for message, correlation_id in entries:
            params += (
                message.channel,
                message.account_id,
                message.chat_id,
                message.message_id,
                encode_inbound(message),
                correlation_id,
                InboundStatus.ACCEPTED,
                now,
                now,
            )
        placeholders = ", ".join([_ROW_PLACEHOLDERS] * len(entries))
        rows = await self._db.rows(_INSERT.format(rows=placeholders), params)
        return journaled_ids(entries, map(self._db.dialect.columns, rows))

    @override
    async def update(
        self,
        entry_id: int,
        status: InboundStatus,
        *,
        reason: str | None = None,
        key: ConversationKey | None = None,
        thread_id: str | None = None,
    ) -> None:
        """Set the status; ``reason``, ``key`` and ``thread_id`` change only when given."""
        key_params = (None,) * 5 if key is None else key_values(key)
        now = self._time(self._db.now())
        await self._db.execute_batched(
            _UPDATE, (status, now, reason, *key_params, thread_id, entry_id, status)
        )

    @override
    async def find(self, channel: str | None, message_id: str) -> list[JournalEntry]:
        if channel is None:
            rows = await self._db.rows(f"{_SELECT} WHERE message_id = ? ORDER BY id", (message_id,))
        else:
            rows = await self._db.rows(
                f"{_SELECT} WHERE message_id = ? AND channel = ? ORDER BY id",
                (message_id, channel),
            )
        return self._entries(rows)

    @override
    async def find_correlation(self, correlation_id: str) -> list[JournalEntry]:
        """By the index ``inbound_correlation`` (SQLite schema 11, PostgreSQL 9)."""
        rows = await self._db.rows(
            f"{_SELECT} WHERE correlation_id = ? ORDER BY id", (correlation_id,)
        )
        return self._entries(rows)

    @override
    async def unfinished(self) -> list[JournalEntry]:
        """Accepted or running entries, oldest first: what a restart must resume."""
        rows = await self._db.rows(
            f"{_SELECT} WHERE {self._unfinished} ORDER BY id",
            (self._db.dialect.array(_UNFINISHED),),
        )
        return self._entries(rows)

    @override
    async def count_duplicate(self, message: InboundMessage) -> None:
        m = message
        await self._db.execute(
            "UPDATE inbound SET duplicates = duplicates + 1, last_duplicate_at = ?"
            " WHERE channel = ? AND account_id = ? AND chat_id = ? AND message_id = ?",
            (self._time(self._db.now()), m.channel, m.account_id, m.chat_id, m.message_id),
        )

    async def duplicates(self, entry_id: int) -> int:
        """How many redeliveries of the entry arrived (also ``JournalEntry.duplicates``)."""
        row = await self._db.row("SELECT duplicates FROM inbound WHERE id = ?", (entry_id,))
        return 0 if row is None else self._db.dialect.columns(row).integer("duplicates")

    @override
    async def prune(self, before: datetime) -> int:
        """Forget finished entries recorded before ``before``; unfinished ones always stay."""
        return await self._db.write(
            f"DELETE FROM inbound WHERE recorded_at < ? AND NOT ({self._unfinished})",  # noqa: S608 - fragments, not values
            (self._time(before), self._db.dialect.array(_UNFINISHED)),
        )
