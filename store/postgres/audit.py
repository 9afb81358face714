"""The append-only audit log and the name -> value settings table, on PostgreSQL."""

from __future__ import annotations

from typing_extensions import override

from bot.ports import AuditLog, SettingsStore
from bot.records import AuditEntry
from store.codec import to_utc
from store.postgres.db import PgDatabase
from store.postgres.rows import PgColumns
from store.rows import audit_entry


class PgAuditLog(AuditLog):
    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    @override
    async def record(self, actor: str, action: str, detail: str) -> None:
        await self._db.execute(
            "INSERT INTO audit (at, actor, action, detail) VALUES (%s, %s, %s, %s)",
            (to_utc(self._db.now()), actor, action, detail),
        )

    @override
    async def recent(self, limit: int = 50) -> list[AuditEntry]:
        """The latest entries, newest first."""
        rows = await self._db.rows("SELECT * FROM audit ORDER BY id DESC LIMIT %s", (limit,))
        return [audit_entry(PgColumns(row)) for row in rows]


class PgSettingsStore(SettingsStore):
    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    @override
    async def get(self, name: str) -> str | None:
        row = await self._db.row("SELECT value FROM settings WHERE name = %s", (name,))
        return None if row is None else PgColumns(row).text("value")

    @override
    async def set(self, name: str, value: str | None) -> None:
        """Store ``value``; ``None`` removes the setting."""
        if value is None:
            await self._db.execute("DELETE FROM settings WHERE name = %s", (name,))
            return
        await self._db.execute(
            "INSERT INTO settings (name, value, updated_at) VALUES (%s, %s, %s)"
            " ON CONFLICT (name) DO UPDATE SET value = excluded.value,"
            " updated_at = excluded.updated_at",
            (name, value, to_utc(self._db.now())),
        )
