"""Model usage per turn (design §25): what the provider reported, kept per channel, chat, user,
thread and model, summed for ``/usage``, ``switchboard usage``, the console and budgets.

Kept beside the Store port (as ``bot/ports/schedules.py`` is), so a store without usage still
works: nothing is counted and no budget holds.

Rows are per model call of a turn, recorded as the agent reports each (so a turn cut short
by a crash still counts the calls the provider served), for ``usage.detail_days``, then
folded into one row per day and dimension (channel, chat, user, model), so the table stays
small at a million turns while every total stays exact. Dimensions are stored as written:
``user`` and ``chat`` are platform ids, qualified by ``channel`` wherever they are shown or
grouped.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol, runtime_checkable

from bot.ports.store import Store

UsageDimension = Literal["user", "chat", "channel", "model"]
Bucket = Literal["hour", "day"]


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageRecord:
    """Usage of one model in a turn: the calls reported together, summed."""

    at: datetime
    channel: str
    account_id: str
    chat_id: str
    user_id: str
    thread_id: str
    model: str
    correlation_id: str
    calls: int
    """Model calls made."""
    unreported_calls: int
    """Calls whose usage the provider did not report: unknown, never counted as zero."""
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    """Cached input tokens (a part of ``input_tokens``) where the provider reports them."""
    cost: float
    """From ``usage.prices`` when recorded."""


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageTotal:
    """Usage summed over a group (``group`` is ``""`` when nothing was grouped)."""

    group: str
    turns: int
    calls: int
    unreported_calls: int
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    cost: float

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageFilter:
    """Which rows a total counts; unset fields count every row."""

    since: datetime | None = None
    until: datetime | None = None
    channel: str | None = None
    chat_id: str | None = None
    user_id: str | None = None
    model: str | None = None


class UsageStore(Protocol):
    async def record(self, records: list[UsageRecord], *, counts_turn: bool = True) -> None:
        """Add rows of one turn (one per model) in one transaction; the first counts the turn
        unless ``counts_turn`` is false (the turn's later calls, recorded as they come)."""
        ...

    async def totals(
        self, where: UsageFilter, by: UsageDimension | None = None, limit: int = 100
    ) -> list[UsageTotal]:
        """Sums per group (``channel:id`` for users and chats), largest token total first;
        one row with ``group=""`` (zeros if nothing matched) when ``by`` is ``None``."""
        ...

    async def over_time(
        self, where: UsageFilter, bucket: Bucket, by: UsageDimension = "channel"
    ) -> list[tuple[datetime, UsageTotal]]:
        """Sums per time bucket (its start, UTC) and group, oldest first."""
        ...

    async def hit(self, channel: str, user_id: str, minute: datetime) -> int:
        """Count one message from the user in the minute starting at ``minute``; returns
        the count so far (the per-user message rate, across replicas on a shared store)."""
        ...

    async def fold(self, before: datetime) -> int:
        """Fold per-call rows older than ``before`` into one row per day and dimension;
        returns how many rows were folded."""
        ...

    async def purge(self, before: datetime) -> int:
        """Delete usage (and message counts) older than ``before``; returns how many rows."""
        ...


@runtime_checkable
class KnowsUsage(Protocol):
    @property
    def usage(self) -> UsageStore: ...


def usage_of(store: Store) -> UsageStore | None:
    """The store's ``UsageStore``, if it has one."""
    return store.usage if isinstance(store, KnowsUsage) else None
