"""The kernel loop ``schedules``: fire what is due, exactly once (design §19 "Schedules").

Every round (at the earliest next firing, at least once a second, so schedules another
process added are seen) the loop takes the active schedules whose ``next_fire_at`` has come
and, for each, **claims** the firing before doing anything else: one store transaction moves
``next_fire_at`` on (compare-and-set on the due time) and inserts the firing row as
``claimed``; whoever does not get it (another replica, a second round) leaves it alone. Then
it pushes (``Pusher.push``) under the idempotency key ``schedule-<id>-<due, UTC>`` and settles
the firing ``delivered`` or ``late`` with the delivery id. A kill between the claim and the
settle leaves the firing ``claimed``: the next start (or any replica, a while later) pushes it
again under the same key, which records nothing twice, so a firing is delivered once.

**Misfires.** The loop judges a due schedule by its newest time that has come (a cron
schedule down for hours has missed several): within ``misfire_grace_s`` of now it is
delivered (``late`` when more than ``LATE_AFTER_S`` behind), else recorded ``skipped``. Either
way the schedule moves to its first time after now: one firing per schedule per round, never
one per missed time.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

from prometheus_client import Counter, Gauge

from bot.errors import StoreError
from bot.messages import utc_now
from bot.ports import Store
from bot.ports.push import (
    PushProblem,
    PushReceipt,
    PushRefused,
    PushRequest,
    PushTarget,
    PushText,
    RunAgent,
)
from bot.ports.schedules import (
    Firing,
    FiringOutcome,
    Schedule,
    ScheduleAction,
    ScheduleRefused,
    schedules_of,
)
from bot.schedules.times import latest_cron, next_cron

logger = logging.getLogger(__name__)

ROUND_S = 1.0
LATE_AFTER_S = 5.0
"""A firing delivered more than this after its time counts as ``late``."""
RETRY_CLAIMED_S = 30.0
"""A firing left ``claimed`` this long (its claimant died, or the push was refused for now)
is pushed again; at start every claimed one is."""


def idempotency_key(schedule_id: int, due_at: datetime) -> str:
    return f"schedule-{schedule_id}-{due_at:%Y%m%dT%H%M%SZ}"


def push_request(schedule: Schedule, due_at: datetime) -> PushRequest:
    target = schedule.target
    body: PushText | RunAgent = RunAgent(prompt=schedule.text)
    if schedule.action is ScheduleAction.MESSAGE:
        body = PushText(text=schedule.text)
    return PushRequest(
        target=PushTarget(
            channel=target.channel,
            chat_id=target.chat_id,
            account_id=target.account_id,
            topic_id=target.topic_id,
            user_id=target.user_id,
            chat_type=target.chat_type,
        ),
        body=body,
        idempotency_key=idempotency_key(schedule.id, due_at),
        actor=f"schedule:{schedule.id}",
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class FiringDeps:
    store: Store
    push: Callable[[PushRequest], Awaitable[PushReceipt]]
    replica_id: str
    fired: Counter
    """``switchboard_schedule_firings_total{outcome}``."""
    active: Gauge
    clock: Callable[[], datetime] = utc_now


class ScheduleFiring:
    def __init__(self, deps: FiringDeps) -> None:
        self._deps = deps
        self.fired = asyncio.Event()
        """Set after every firing this loop settles (tests wait on it)."""

    async def run(self, ready: asyncio.Event) -> None:
        """Once the daemon is ready (crash recovery done, channels up), fire until cancelled."""
        table = schedules_of(self._deps.store)
        if table is None:
            return
        await ready.wait()
        await self.retry_claimed(everything=True)
        while True:
            try:
                soonest = await self.round()
            except StoreError as exc:  # a store outage: try again next round, never die of it
                logger.warning("schedules: the store failed (%s); trying again", exc)
                soonest = None
            pause = ROUND_S
            if soonest is not None:
                pause = min(ROUND_S, max(0.0, (soonest - self._deps.clock()).total_seconds()))
            await asyncio.sleep(pause)

    async def round(self) -> datetime | None:
        """Fire what is due; the next firing time of any active schedule."""
        table = schedules_of(self._deps.store)
        assert table is not None  # noqa: S101 - run checked
        await self.retry_claimed(everything=False)
        for schedule in await table.due(self._deps.clock()):
            try:
                await self._fire(schedule)
            except (StoreError, ScheduleRefused) as exc:
                logger.warning("schedule %d: firing failed, retried later: %s", schedule.id, exc)
        counts = await table.counts()
        self._deps.active.set(counts.active)
        return counts.next_fire_at

    async def retry_claimed(self, *, everything: bool) -> None:
        table = schedules_of(self._deps.store)
        assert table is not None  # noqa: S101 - run checked
        now = self._deps.clock()
        for schedule, firing in await table.unsettled():
            if everything or (now - firing.at).total_seconds() >= RETRY_CLAIMED_S:
                logger.info("schedule %d: pushing a claimed firing again", schedule.id)
                late_by = (firing.at - firing.due_at).total_seconds()
                await self._deliver(schedule, firing, late_by)

    async def _fire(self, schedule: Schedule) -> None:
        due = schedule.next_fire_at
        assert due is not None  # noqa: S101 - only active schedules are due
        now = self._deps.clock()
        latest, following = due, None
        if schedule.cron is not None:
            latest = latest_cron(schedule.cron, schedule.timezone, due, now)
            following = next_cron(schedule.cron, schedule.timezone, max(now, latest))
        late_by = (now - latest).total_seconds()
        skipped = late_by > schedule.misfire_grace_s
        firing = Firing(
            schedule_id=schedule.id,
            due_at=due,
            outcome=FiringOutcome.SKIPPED if skipped else FiringOutcome.CLAIMED,
            replica=self._deps.replica_id,
            delivery_id=None,
            at=now,
            detail=f"missed by {late_by:.0f} s (grace {schedule.misfire_grace_s} s)"
            if skipped
            else None,
        )
        table = schedules_of(self._deps.store)
        assert table is not None  # noqa: S101 - run checked
        if not await table.claim(schedule, next_fire_at=following, firing=firing):
            return  # another replica (or round) claimed it
        if skipped:
            logger.warning("schedule %d: %s, skipped", schedule.id, firing.detail)
            self._counted(FiringOutcome.SKIPPED)
            return
        await self._deliver(schedule, firing, late_by)

    async def _deliver(self, schedule: Schedule, firing: Firing, late_by: float) -> None:
        table = schedules_of(self._deps.store)
        assert table is not None  # noqa: S101 - run checked
        try:
            receipt = await self._deps.push(push_request(schedule, firing.due_at))
        except PushRefused as exc:
            if exc.problem is PushProblem.UNAVAILABLE:
                logger.warning("schedule %d: %s; pushed again later", schedule.id, exc.message)
                return  # stays claimed
            logger.warning("schedule %d: push refused: %s", schedule.id, exc.message)
            await table.settle(firing, FiringOutcome.FAILED, delivery_id=None, detail=exc.message)
            self._counted(FiringOutcome.FAILED)
            return
        late = late_by > LATE_AFTER_S
        outcome = FiringOutcome.LATE if late else FiringOutcome.DELIVERED
        detail = f"{late_by:.0f} s late" if late else None
        await table.settle(firing, outcome, delivery_id=receipt.delivery_id, detail=detail)
        logger.info(
            "schedule %d fired due=%s outcome=%s delivery=%s",
            schedule.id,
            firing.due_at.isoformat(),
            outcome,
            receipt.delivery_id,
        )
        self._counted(outcome)

    def _counted(self, outcome: FiringOutcome) -> None:
        self._deps.fired.labels(outcome=outcome.value).inc()
        self.fired.set()
        self.fired.clear()
