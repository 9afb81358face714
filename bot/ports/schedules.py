"""Durable schedules (design §19 "Schedules"): messages and agent tasks a chat gets at a time
(``at``) or on a cron expression in a time zone.

Kept beside the Store port (as ``bot/ports/chats.py`` is), so a store without schedules still
works: the daemon then has no ``schedules`` loop and the commands say schedules are off.

Exactly once rests on ``claim``: one transaction moves ``next_fire_at`` from the due time to
the next one (compare-and-set on the due time and ``state = 'active'``) and inserts the firing
(unique on schedule and due time), so of two replicas (or a restarted daemon) one gets it. The
firing is ``claimed`` until the push is recorded; a claimed firing is pushed again after a
crash, under the same idempotency key, which makes the repeat add nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Protocol, runtime_checkable

from bot.errors import BotError
from bot.messages import ChatType, ConversationKey
from bot.ports.store import Store


class ScheduleAction(StrEnum):
    MESSAGE = "message"
    """Post ``text`` into the conversation."""
    AGENT = "agent"
    """Run the agent on ``text`` in the conversation's thread; its answer is posted."""


class ScheduleState(StrEnum):
    ACTIVE = "active"
    DONE = "done"
    """A one-shot that fired (or was skipped)."""
    CANCELLED = "cancelled"


class FiringOutcome(StrEnum):
    CLAIMED = "claimed"
    """Taken by a replica; the push is being recorded (pushed again after a crash)."""
    DELIVERED = "delivered"
    LATE = "late"
    """Delivered after its time (the daemon was down or busy), within the misfire grace."""
    SKIPPED = "skipped"
    """Missed by more than the misfire grace: not delivered."""
    FAILED = "failed"
    """The push was refused (the channel is not enabled, the chat unknown)."""


class ScheduleRefused(BotError):
    """A schedule that cannot be created (bad cron, unknown zone, past time, a limit)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ScheduleTarget:
    """The conversation a schedule posts into (``PushTarget``'s fields, all known)."""

    channel: str
    account_id: str
    chat_id: str
    chat_type: ChatType
    topic_id: str | None = None
    user_id: str | None = None

    def describe(self) -> str:
        """Its conversation's readable form (``ConversationKey.describe``)."""
        return ConversationKey(
            channel=self.channel,
            account_id=self.account_id,
            chat_id=self.chat_id,
            topic_id=self.topic_id,
            user_id=self.user_id,
        ).describe()


@dataclass(frozen=True, slots=True, kw_only=True)
class NewSchedule:
    target: ScheduleTarget
    action: ScheduleAction
    text: str
    at: datetime | None = None
    cron: str | None = None
    timezone: str
    misfire_grace_s: int
    next_fire_at: datetime
    created_by: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Schedule:
    id: int
    target: ScheduleTarget
    action: ScheduleAction
    text: str
    at: datetime | None
    cron: str | None
    timezone: str
    misfire_grace_s: int
    state: ScheduleState
    next_fire_at: datetime | None
    created_by: str
    created_at: datetime
    updated_at: datetime
    last_fired_at: datetime | None = None
    last_outcome: FiringOutcome | None = None

    @property
    def when(self) -> str:
        """``at <time>`` or ``cron <expr> (<zone>)``, for lists."""
        if self.cron is not None:
            return f"cron {self.cron!r} ({self.timezone})"
        at = self.at.isoformat() if self.at is not None else "?"
        return f"at {at} ({self.timezone})"


@dataclass(frozen=True, slots=True, kw_only=True)
class Firing:
    schedule_id: int
    due_at: datetime
    outcome: FiringOutcome
    replica: str
    delivery_id: str | None
    at: datetime
    detail: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ScheduleCounts:
    active: int
    next_fire_at: datetime | None


class ScheduleStore(Protocol):
    async def add(self, new: NewSchedule, *, max_per_chat: int, max_total: int) -> Schedule:
        """Insert an active schedule; ``ScheduleRefused`` when the chat or the store has
        its limit of active schedules already."""
        ...

    async def get(self, schedule_id: int) -> Schedule | None: ...

    async def listed(
        self, *, channel: str | None = None, chat_id: str | None = None, active_only: bool = True
    ) -> list[Schedule]:
        """Schedules (of one chat when named), oldest first."""
        ...

    async def cancel(self, schedule_id: int) -> Schedule | None:
        """Cancel an active schedule; ``None`` when there is no active one of that id."""
        ...

    async def due(self, now: datetime) -> list[Schedule]:
        """Active schedules whose ``next_fire_at`` has come, earliest first."""
        ...

    async def counts(self) -> ScheduleCounts:
        """How many are active, and the earliest next firing."""
        ...

    async def claim(
        self, schedule: Schedule, *, next_fire_at: datetime | None, firing: Firing
    ) -> bool:
        """In one transaction: move the schedule from ``firing.due_at`` to ``next_fire_at``
        (``None``: done) if it is still active and due then, and insert ``firing``. ``False``
        when another claimant was first (nothing written)."""
        ...

    async def settle(
        self, firing: Firing, outcome: FiringOutcome, *, delivery_id: str | None, detail: str | None
    ) -> None:
        """Record how a claimed firing ended (on the firing and as the schedule's last)."""
        ...

    async def unsettled(self) -> list[tuple[Schedule, Firing]]:
        """Firings still ``claimed`` (a crash between the claim and the push), oldest first."""
        ...

    async def firings(self, schedule_id: int, limit: int = 20) -> Sequence[Firing]:
        """The schedule's latest firings, newest first."""
        ...


@runtime_checkable
class TurnScheduler(Protocol):
    """The agent's view of schedules, bound to the conversation of the running turn: the
    agent can neither name nor reach another chat. Each call returns a sentence for the
    model (a confirmation, a list, or what was wrong), never raises for bad input."""

    async def create(
        self, *, at: str | None, cron: str | None, timezone: str | None, action: str, text: str
    ) -> str: ...

    async def listed(self) -> str: ...

    async def cancel(self, schedule_id: int) -> str: ...


@runtime_checkable
class KnowsSchedules(Protocol):
    @property
    def schedules(self) -> ScheduleStore: ...


def schedules_of(store: Store) -> ScheduleStore | None:
    """The store's ``ScheduleStore``, if it has one."""
    return store.schedules if isinstance(store, KnowsSchedules) else None
