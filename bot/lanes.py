"""Per-conversation FIFO lanes with busy policies and a global run bound (SPEC §5).

Each ConversationKey gets a lane only while it has work. A lane runs one turn at a time;
a lane waiting for a global slot holds a semaphore place in line, not a worker, so a slow
conversation never delays another beyond the global bound.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from enum import StrEnum

from bot.bus import Accepted
from bot.config import BusyPolicy
from bot.messages import ConversationKey, Destination
from bot.records import Clarification

logger = logging.getLogger(__name__)


class CancelReason(StrEnum):
    STOP = "stopped"
    INTERRUPT = "interrupted"
    SHUTDOWN = "shutdown"
    TIMEOUT = "timeout"


@dataclass(slots=True)
class CancelToken:
    """Why a running turn was cancelled; set just before ``Task.cancel()``."""

    reason: CancelReason | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnRequest:
    """Work for one lane: inbound messages, or the answer to a pending question."""

    key: ConversationKey
    destination: Destination
    items: tuple[Accepted, ...]
    answered: Clarification | None = None
    answer: str | None = None

    @property
    def mergeable(self) -> bool:
        return self.answered is None


def merge(requests: list[TurnRequest]) -> TurnRequest:
    """Several queued messages become one turn, in arrival order (SPEC §5 queue policy)."""
    last = requests[-1]
    items = tuple(item for request in requests for item in request.items)
    return TurnRequest(key=last.key, destination=last.destination, items=items)


class SubmitOutcome(StrEnum):
    STARTED = "started"
    QUEUED = "queued"
    INTERRUPTING = "interrupting"
    REJECTED = "rejected"


@dataclass(frozen=True, slots=True, kw_only=True)
class LaneStatus:
    running: bool
    queued: int


Runner = Callable[[TurnRequest, CancelToken], Coroutine[object, object, None]]


@dataclass(slots=True)
class _Lane:
    key: ConversationKey
    pending: deque[TurnRequest] = field(default_factory=deque)
    driver: asyncio.Task[None] | None = None
    turn: asyncio.Task[None] | None = None
    token: CancelToken = field(default_factory=CancelToken)

    @property
    def running(self) -> bool:
        return self.turn is not None and not self.turn.done()


class Lanes:
    def __init__(self, runner: Runner, max_concurrent_runs: int) -> None:
        self._runner = runner
        self._slots = asyncio.Semaphore(max_concurrent_runs)
        self._lanes: dict[ConversationKey, _Lane] = {}
        self._idle = asyncio.Event()
        self._idle.set()

    @property
    def active_runs(self) -> int:
        return sum(1 for lane in self._lanes.values() if lane.running)

    @property
    def queued(self) -> int:
        return sum(len(lane.pending) for lane in self._lanes.values())

    def status(self, key: ConversationKey) -> LaneStatus:
        lane = self._lanes.get(key)
        if lane is None:
            return LaneStatus(running=False, queued=0)
        return LaneStatus(running=lane.running, queued=len(lane.pending))

    def submit(self, request: TurnRequest, policy: BusyPolicy) -> SubmitOutcome:
        lane = self._lanes.get(request.key)
        if lane is None:
            lane = self._lanes[request.key] = _Lane(key=request.key)
        if lane.running and request.mergeable:
            if policy is BusyPolicy.REJECT:
                return SubmitOutcome.REJECTED
            lane.pending.append(request)
            if policy is BusyPolicy.INTERRUPT:
                self._cancel_turn(lane, CancelReason.INTERRUPT)
                return SubmitOutcome.INTERRUPTING
            return SubmitOutcome.QUEUED
        lane.pending.append(request)
        if lane.driver is None:
            self._idle.clear()
            lane.driver = asyncio.create_task(
                self._drive(lane), name=f"lane:{request.key.describe()}"
            )
            return SubmitOutcome.STARTED
        return SubmitOutcome.QUEUED

    def stop(self, key: ConversationKey) -> tuple[bool, list[TurnRequest]]:
        """Cancel the running turn and clear the queue; returns (was running, cleared)."""
        lane = self._lanes.get(key)
        if lane is None:
            return False, []
        cleared = list(lane.pending)
        lane.pending.clear()
        was_running = lane.running
        self._cancel_turn(lane, CancelReason.STOP)
        return was_running, cleared

    def _cancel_turn(self, lane: _Lane, reason: CancelReason) -> None:
        if lane.turn is not None and not lane.turn.done():
            lane.token.reason = reason
            lane.turn.cancel()

    async def _drive(self, lane: _Lane) -> None:
        try:
            while lane.pending:
                request = self._next(lane)
                async with self._slots:
                    lane.token = CancelToken()
                    lane.turn = asyncio.create_task(
                        self._runner(request, lane.token), name=f"turn:{lane.key.describe()}"
                    )
                    await asyncio.wait({lane.turn})
                    if not lane.turn.cancelled() and lane.turn.exception() is not None:
                        logger.error("turn failed", exc_info=lane.turn.exception())
        finally:
            lane.driver = None
            lane.turn = None
            if not lane.pending:
                self._lanes.pop(lane.key, None)
            if not any(lane.driver for lane in self._lanes.values()):
                self._idle.set()

    @staticmethod
    def _next(lane: _Lane) -> TurnRequest:
        first = lane.pending.popleft()
        if not first.mergeable:
            return first
        batch = [first]
        while lane.pending and lane.pending[0].mergeable:
            batch.append(lane.pending.popleft())
        return merge(batch) if len(batch) > 1 else first

    async def wait_idle(self) -> None:
        await self._idle.wait()

    async def shutdown(self, grace_s: float) -> list[TurnRequest]:
        """Let running turns finish for ``grace_s``, then cancel them for resumption.

        Returns the queued requests that never started (they stay journaled as accepted).
        """
        leftovers = [request for lane in self._lanes.values() for request in lane.pending]
        for lane in self._lanes.values():
            lane.pending.clear()
        running = [lane.turn for lane in self._lanes.values() if lane.turn and not lane.turn.done()]
        if running:
            await asyncio.wait(running, timeout=grace_s)
        for lane in list(self._lanes.values()):
            self._cancel_turn(lane, CancelReason.SHUTDOWN)
        cancelled = [lane.turn for lane in self._lanes.values() if lane.turn is not None]
        await asyncio.gather(*cancelled, return_exceptions=True)
        drivers = [lane.driver for lane in self._lanes.values() if lane.driver is not None]
        for driver in drivers:
            driver.cancel()
        await asyncio.gather(*drivers, return_exceptions=True)
        return leftovers
