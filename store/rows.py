"""Typed reads out of ``sqlite3.Row`` and the column form of a ConversationKey.

A key is five columns (channel, account_id, chat_id, topic_id, user_id), never one joined
string. SQLite treats NULLs as distinct in UNIQUE indexes, so an absent topic or user is stored
as ``''`` and read back as ``None``; no platform uses an empty string as an id.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime

from bot.errors import StoreError
from bot.messages import ConversationKey
from store.codec import from_db_time

KeyValues = tuple[str, str, str, str, str]


def key_values(key: ConversationKey) -> KeyValues:
    return (key.channel, key.account_id, key.chat_id, key.topic_id or "", key.user_id or "")


class Columns:
    """Reads one row's columns as the types the schema promises, or fails loudly."""

    __slots__ = ("_row",)

    def __init__(self, row: sqlite3.Row) -> None:
        self._row = row

    def text(self, name: str) -> str:
        value = self._row[name]
        if not isinstance(value, str):
            raise StoreError(f"column {name} holds {value!r}, expected text")
        return value

    def opt_text(self, name: str) -> str | None:
        return None if self._row[name] is None else self.text(name)

    def integer(self, name: str) -> int:
        value = self._row[name]
        if not isinstance(value, int):
            raise StoreError(f"column {name} holds {value!r}, expected an integer")
        return value

    def at(self, name: str) -> datetime:
        return from_db_time(self.text(name))

    def opt_at(self, name: str) -> datetime | None:
        return None if self._row[name] is None else self.at(name)

    def key(self, prefix: str = "") -> ConversationKey:
        return ConversationKey(
            channel=self.text(f"{prefix}channel"),
            account_id=self.text(f"{prefix}account_id"),
            chat_id=self.text(f"{prefix}chat_id"),
            topic_id=self.text(f"{prefix}topic_id") or None,
            user_id=self.text(f"{prefix}user_id") or None,
        )

    def opt_key(self, prefix: str) -> ConversationKey | None:
        return None if self._row[f"{prefix}channel"] is None else self.key(prefix)
