"""The append-only audit log and the small name -> value settings table (pause state)."""

from __future__ import annotations

from typing_extensions import override

from bot.ports import AuditLog, SettingsStore
from bot.records import AuditEntry
from store.codec import to_db_time
from store.db import Database
from store.rows import Columns, audit_entry


class SqliteAuditLog(AuditLog):
    def __init__(self, db: Database) -> None:
        self._db = db

    @override
    async def record(self, actor: str, action: str, detail: str) -> None:
        await self._db.execute(
            "INSERT INTO audit (at, actor, action, detail) VALUES (?, ?, ?, ?)",
            (to_db_time(self._db.now()), actor, action, detail),
        )

    @override
    async def recent(self, limit: int = 50) -> list[AuditEntry]:
        """The latest entries, newest first."""
        rows = await self._db.rows("SELECT * FROM audit ORDER BY id DESC LIMIT ?", (limit,))
        return [audit_entry(Columns(row)) for row in rows]


class SqliteSettingsStore(SettingsStore):
    def __init__(self, db: Database) -> None:
        self._db = db

    @override
    async def get(self, name: str) -> str | None:
        row = await self._db.row("SELECT value FROM settings WHERE name = ?", (name,))
        return None if row is None else Columns(row).text("value")

    @override
    async def set(self, name: str, value: str | None) -> None:
        """Store ``value``; ``None`` removes the setting."""
        if value is None:
            await self._db.execute("DELETE FROM settings WHERE name = ?", (name,))
            return
        await self._db.execute(
            "INSERT INTO settings (name, value, updated_at) VALUES (?, ?, ?)"
            " ON CONFLICT (name) DO UPDATE SET value = excluded.value,"
            " updated_at = excluded.updated_at",
            (name, value, to_db_time(self._db.now())),
        )
