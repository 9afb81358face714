"""How long usage is kept (design §25): a housekeeping job folds per-call rows older than
``usage.detail_days`` into one row per day and purges usage older than
``usage.retention_days``.

The fold's cutoff is a UTC day's start, so each day is folded once, whole, however often the
job runs (a cutoff inside a day would fold that day in pieces). Message counts need no job of
their own: a user's earlier minutes go as a new one is counted, the rest with the purge.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.config.settings import Settings
from bot.ports import Store
from bot.ports.usage import usage_of


def day_start(at: datetime) -> datetime:
    """The start of ``at``'s day, UTC."""
    return at.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


async def keep_usage(store: Store, settings: Settings, now: datetime) -> tuple[int, int]:
    """``(rows folded, rows purged)``; ``(0, 0)`` when the store keeps no usage."""
    usage = usage_of(store)
    if usage is None:
        return 0, 0
    kept = settings.usage
    purged = await usage.purge(now - timedelta(days=kept.retention_days))  # first: not folded
    folded = await usage.fold(day_start(now - timedelta(days=kept.detail_days)))
    return folded, purged
