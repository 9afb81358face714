"""What the console's pages read and act on, handed in by the composition root."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from bot.approvals.metrics import ApprovalMetrics
from bot.config.settings import Settings
from bot.hub import ChannelHub
from bot.ports import Store


class LiveCounts(Protocol):
    """This replica's in-memory queues (the kernel's bus and lanes)."""

    @property
    def queue_depth(self) -> int: ...

    @property
    def queue_capacity(self) -> int: ...

    @property
    def active_runs(self) -> int: ...

    @property
    def queued_turns(self) -> int: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsoleDeps:
    settings: Callable[[], Settings]
    """The settings now (a reload changes the token and the limits)."""
    store: Store
    hub: ChannelHub
    replica_id: str | None = None
    live: LiveCounts | None = None
    repoll: Callable[[], None] | None = None
    """Tell this replica's outbox to look at the store now (after a retry)."""
    approval_metrics: ApprovalMetrics | None = None
    """The daemon's approval metrics: a decision made here counts there too."""
