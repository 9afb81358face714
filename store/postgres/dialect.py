"""How PostgreSQL spells what SQLite keeps as text: native ``timestamptz``, ``text[]`` and
``bigint[]`` columns (``store.dialect``).

``timestamptz`` comes back as an aware datetime (in the session's zone, UTC here) and is
returned in UTC, as SQLite's text is; ``text[]`` comes back as a list. Everything else reads
as in SQLite, so one builder per record (``store.rows``) serves both backends.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from typing_extensions import override

from bot.errors import StoreError
from store.codec import to_utc
from store.dialect import Dialect
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


def _array(values: Sequence[str] | Sequence[int]) -> list[object]:
    return list(values)


POSTGRES = Dialect(
    columns=PgColumns,
    time=to_utc,
    array=_array,
    strings="?::text[]",
    ids="?::bigint[]",
    in_strings="{} = ANY (?::text[])",
    in_ids="{} = ANY (?::bigint[])",
    seq="seq",
    chat_leases=True,
    hour_start="date_trunc('hour', {}, 'UTC')",
    day_start="date_trunc('day', {}, 'UTC')",
    try_lock="SELECT pg_try_advisory_xact_lock(hashtext(current_schema() || ':' || ?)) AS held",
)
"""PostgreSQL: ``seq`` is an identity column that stands in for SQLite's rowid; a lock is an
advisory lock of the transaction, named in the store's schema (the ``search_path``)."""
