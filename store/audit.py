"""The append-only audit log and the small name -> value settings table (pause state)."""

from __future__ import annotations

from typing_extensions import override

from bot.ports import AuditLog, SettingsStore
from bot.records import AuditEntry
from store.dialect import Backend
from store.rows import audit_entry


class SqlAuditLog(AuditLog):
    def __init__(self, db: Backend) -> None:
        self._db = db

    @override
    async def record(self, actor: str, action: str, detail: str) -> None:
        await self._db.execute(
            "INSERT INTO audit (at, actor, action, detail) VALUES (?, ?, ?, ?)",
            (self._db.dialect.time(self._db.now()), actor, action, detail),
        )

    @override
    async def recent(self, limit: int = 50) -> list[AuditEntry]:
        """The latest entries, newest first."""
        rows = await self._db.rows("SELECT * FROM audit ORDER BY id DESC LIMIT ?", (limit,))
        return [audit_entry(self._db.dialect.columns(row)) for row in rows]


class SqlSettingsStore(SettingsStore):
    def __init__(self, db: Backend) -> None:
        self._db = db

    @override
    async def get(self, name: str) -> str | None:
        row = await self._db.row("SELECT value FROM settings WHERE name = ?", (name,))
        return None if row is None else self._db.dialect.columns(row).text("value")

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
            (name, value, self._db.dialect.time(self._db.now())),
        )
