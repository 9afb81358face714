"""Typed reads of PostgreSQL's native column types, for the record builders of ``store.rows``.

``timestamptz`` comes back as an aware datetime (in the session's zone, UTC here) and is
returned in UTC, as SQLite's text is; ``text[]`` comes back as a list. Everything else reads
as in SQLite, so one builder per record serves both backends.
"""

from __future__ import annotations

from datetime import UTC, datetime

from typing_extensions import override

from bot.errors import StoreError
from store.rows import Columns


class PgColumns(Columns):
    __slots__ = ()

    @override
    def at(self, name: str) -> datetime:
        value = self.value(name)
        if not isinstance(value, datetime) or value.tzinfo is None:
            raise StoreError(f"column {name} holds {value!r}, expected a timestamptz")
        return value.astimezone(UTC)

    @override
    def strings(self, name: str) -> tuple[str, ...]:
        value = self.value(name)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise StoreError(f"column {name} holds {value!r}, expected text[]")
        return tuple(value)
