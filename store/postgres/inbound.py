"""The inbound journal on PostgreSQL: dedupe key and crash-recovery record (``store.inbound``).

The dedupe key is the unique (channel, account_id, chat_id, message_id), and ``record_many``
one multi-row ``INSERT ... ON CONFLICT DO NOTHING RETURNING``: when two replicas journal one
message at the same moment, the second waits for the first's row, then skips it, so exactly
one of them learns an id.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Final

from typing_extensions import override

from bot.messages import ConversationKey, InboundMessage
from bot.ports import InboundJournal
from bot.records import UNFINISHED_INBOUND, InboundStatus, JournalEntry
from store.codec import encode_inbound, to_utc
from store.postgres.db import PgDatabase
from store.postgres.rows import PgColumns
from store.rows import journal_entry, journaled_ids, key_values

_SELECT: Final = "SELECT * FROM inbound"
_UNFINISHED: Final = [str(status) for status in UNFINISHED_INBOUND]
_ROW_PLACEHOLDERS: Final = "(%s, %s, %s, %s, %s, %s, %s, %s, %s)"
_INSERT: Final = (
    "INSERT INTO inbound (channel, account_id, chat_id, message_id, message, correlation_id,"
    " status, recorded_at, updated_at) VALUES {rows}"
    " ON CONFLICT (channel, account_id, chat_id, message_id) DO NOTHING"
    " RETURNING id, channel, account_id, chat_id, message_id"
)
"""``{rows}`` is only ever placeholders, one group per entry."""


class PgInboundJournal(InboundJournal):
    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    @override
    async def record_many(self, entries: Sequence[tuple[InboundMessage, str]]) -> list[int | None]:
        """One statement for the batch; an entry already journaled (by anyone), or repeated
        earlier in the batch, gets ``None``."""
        if not entries:
            return []
        now = to_utc(self._db.now())
        params: list[object] = []
        for message, correlation_id in entries:
            params += (
                message.channel, message.account_id, message.chat_id, message.message_id,
                encode_inbound(message), correlation_id, InboundStatus.ACCEPTED, now, now,
            )  # fmt: skip
        placeholders = ", ".join([_ROW_PLACEHOLDERS] * len(entries))
        rows = await self._db.rows(_INSERT.format(rows=placeholders), params)
        return journaled_ids(entries, map(PgColumns, rows))

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
        await self._db.execute(
            "UPDATE inbound SET status = %s, updated_at = %s,"
            " reason = COALESCE(%s, reason),"
            " key_channel = COALESCE(%s, key_channel),"
            " key_account_id = COALESCE(%s, key_account_id),"
            " key_chat_id = COALESCE(%s, key_chat_id),"
            " key_topic_id = COALESCE(%s, key_topic_id),"
            " key_user_id = COALESCE(%s, key_user_id),"
            " thread_id = COALESCE(%s, thread_id)"
            " WHERE id = %s",
            (status, to_utc(self._db.now()), reason, *key_params, thread_id, entry_id),
        )

    @override
    async def find(self, channel: str | None, message_id: str) -> list[JournalEntry]:
        if channel is None:
            rows = await self._db.rows(
                f"{_SELECT} WHERE message_id = %s ORDER BY id", (message_id,)
            )
        else:
            rows = await self._db.rows(
                f"{_SELECT} WHERE message_id = %s AND channel = %s ORDER BY id",
                (message_id, channel),
            )
        return [journal_entry(PgColumns(row)) for row in rows]

    @override
    async def unfinished(self) -> list[JournalEntry]:
        """Accepted or running entries, oldest first: what a restart must resume."""
        rows = await self._db.rows(
            f"{_SELECT} WHERE status = ANY (%s::text[]) ORDER BY id", (_UNFINISHED,)
        )
        return [journal_entry(PgColumns(row)) for row in rows]

    @override
    async def count_duplicate(self, message: InboundMessage) -> None:
        await self._db.execute(
            "UPDATE inbound SET duplicates = duplicates + 1, last_duplicate_at = %s"
            " WHERE channel = %s AND account_id = %s AND chat_id = %s AND message_id = %s",
            (
                to_utc(self._db.now()),
                message.channel,
                message.account_id,
                message.chat_id,
                message.message_id,
            ),
        )

    async def duplicates(self, entry_id: int) -> int:
        """How many redeliveries of the entry arrived (also ``JournalEntry.duplicates``)."""
        row = await self._db.row("SELECT duplicates FROM inbound WHERE id = %s", (entry_id,))
        return 0 if row is None else PgColumns(row).integer("duplicates")

    @override
    async def prune(self, before: datetime) -> int:
        """Forget finished entries recorded before ``before``; unfinished ones always stay."""
        return await self._db.write(
            "DELETE FROM inbound WHERE recorded_at < %s AND status <> ALL (%s::text[])",
            (to_utc(before), _UNFINISHED),
        )
