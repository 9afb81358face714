"""Durable approvals (design §24): tool calls a paused agent run waits on, each decided once by
a person allowed to, in chat, on the console or from the CLI.

Kept beside the Store port (as ``bot/ports/schedules.py`` is), so a store without approvals
still works: the daemon then never pauses a run for one.

A paused run (``ApprovalRun``) holds one ``Approval`` per action of its interrupt, in order.
Exactly once rests on two compare-and-sets: ``decide`` moves one approval out of ``pending``
(so of two presses, on any replicas, one wins), and ``claim_run`` marks the run resumed only
when none of its approvals is pending any more and nobody claimed it before (so of the
deciders of its last two approvals, one resumes it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Protocol, runtime_checkable

from bot.messages import ChatType, ConversationKey
from bot.ports.store import Store


class ApprovalState(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    EDITED = "edited"
    """Approved with other arguments (``Approval.decided_args``)."""
    REJECTED = "rejected"
    EXPIRED = "expired"
    """Nobody decided in time: the run resumes with a rejection saying so."""
    CANCELLED = "cancelled"
    """The run cannot resume any more (the conversation moved on, ``/new``, ``/stop``)."""


DECIDED = frozenset({ApprovalState.APPROVED, ApprovalState.EDITED, ApprovalState.REJECTED})


@dataclass(frozen=True, slots=True, kw_only=True)
class Approval:
    """One tool call waiting for a decision; ``id`` is what buttons and ``/approve`` carry."""

    id: str
    run_id: str
    position: int
    """Its place among the run's actions (the order the decisions go back in)."""
    key: ConversationKey
    chat_type: ChatType
    thread_id: str
    asker_id: str
    """The user whose turn paused (``deciders: asker``)."""
    tool: str
    args: str
    """The call's arguments as the model made them, a JSON object."""
    description: str
    allowed: tuple[str, ...]
    """The decisions this action allows: ``approve``, ``edit``, ``reject``."""
    deciders: str
    """Who may decide, fixed when asked: ``asker``, ``admins``, ``anyone`` or
    ``users:<id>,<id>`` (platform user ids)."""
    created_at: datetime
    expires_at: datetime
    state: ApprovalState = ApprovalState.PENDING
    message_id: str | None = None
    """The chat message that shows it (edited when it is decided)."""
    decided_by: str | None = None
    """``<channel>:<user id>`` of the person, ``console:<name>`` or ``cli:<user>``."""
    decided_by_name: str | None = None
    decided_at: datetime | None = None
    decided_args: str | None = None
    """``edit``: the arguments the tool runs with, a JSON object."""
    reason: str | None = None
    """``reject``: the reason the model reads."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRun:
    """A paused agent run: resumed once, when all its approvals are decided or expired."""

    id: str
    key: ConversationKey
    chat_type: ChatType
    thread_id: str
    correlation_id: str
    """The turn that paused (``trace`` follows it to the decisions and the resumed run)."""
    created_at: datetime
    resumed_at: datetime | None = None
    finished_at: datetime | None = None
    """When the resumed run's turn ended; a claimed run without it was cut off by a crash."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Decided:
    """What ``decide`` records for one approval."""

    state: ApprovalState
    by: str
    by_name: str
    at: datetime
    args: str | None = None
    reason: str | None = None


class ApprovalStore(Protocol):
    async def add(self, run: ApprovalRun, approvals: Sequence[Approval]) -> None:
        """Record a paused run and its approvals in one transaction."""
        ...

    async def get(self, approval_id: str) -> Approval | None: ...

    async def run(self, run_id: str) -> tuple[ApprovalRun, list[Approval]] | None:
        """The run and its approvals in ``position`` order."""
        ...

    async def set_message(self, approval_id: str, message_id: str) -> None: ...

    async def decide(self, approval_id: str, decided: Decided) -> bool:
        """Pending (and not expired at ``decided.at``) -> ``decided.state``; ``False`` if it
        was no longer pending or had expired: the decision changes nothing."""
        ...

    async def claim_run(self, run_id: str, now: datetime) -> bool:
        """Mark the run resumed if none of its approvals is pending and it was not claimed;
        ``True`` for the one caller that should resume it."""
        ...

    async def finish_run(self, run_id: str, now: datetime) -> None:
        """The resumed run's turn ended (answered or failed, not cut off)."""
        ...

    async def unfinished_runs(
        self, claimed_before: datetime, limit: int = 100
    ) -> list[ApprovalRun]:
        """Runs claimed before ``claimed_before`` whose resumed turn never ended (a crash cut
        it off), oldest claim first."""
        ...

    async def reclaim(self, run_id: str, claimed_at: datetime, now: datetime) -> bool:
        """Claim a cut-off run again: ``resumed_at`` moves from ``claimed_at`` to ``now`` if it
        is still ``claimed_at`` and the run is unfinished; ``True`` for the one caller that
        resumes it."""
        ...

    async def settled_runs(self, limit: int = 100) -> list[ApprovalRun]:
        """Runs not yet resumed none of whose approvals is pending any more (decided from the
        console or the command line, or expired), oldest first: the daemon resumes them."""
        ...

    async def expire_due(self, now: datetime) -> list[Approval]:
        """Pending approvals past ``expires_at`` -> expired; returns them."""
        ...

    async def cancel_thread(self, thread_id: str) -> list[Approval]:
        """Pending approvals of the thread -> cancelled (its run will not resume); returns
        them."""
        ...

    async def listed(
        self,
        *,
        state: ApprovalState | None = None,
        key: ConversationKey | None = None,
        limit: int = 100,
    ) -> list[Approval]:
        """Approvals newest first, optionally only one state and one conversation."""
        ...

    async def for_correlation(self, correlation_id: str) -> list[Approval]:
        """The approvals of the runs the turn ``correlation_id`` paused (for ``trace``)."""
        ...


@runtime_checkable
class KnowsApprovals(Protocol):
    @property
    def approvals(self) -> ApprovalStore: ...


def approvals_of(store: Store) -> ApprovalStore | None:
    """The store's ``ApprovalStore``, if it has one."""
    return store.approvals if isinstance(store, KnowsApprovals) else None
