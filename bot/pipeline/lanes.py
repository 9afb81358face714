"""Per-conversation FIFO lanes with busy policies and a global run bound (design §5).

Each ConversationKey gets a lane only while it has work. A lane runs one turn at a time;
a lane waiting for a global slot holds a semaphore place in line, not a worker, so a slow
conversation never delays another beyond the global bound.

A lane's driver task runs its turns itself (a task per turn cost more than a short turn's
own bookkeeping). Stopping a turn cancels the driver; the driver takes that cancellation at
the turn's boundary, recognised by the turn's ``CancelToken``, and goes on with the lane.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections import deque
from collections.abc import Callable, Collection, Coroutine
from dataclasses import dataclass, field, replace
from enum import StrEnum

from bot.config.settings import BusyPolicy
from bot.messages import ConversationKey, Destination
from bot.pipeline.bus import Accepted
from bot.pipeline.group_context import HeardMessage
from bot.ports.agent import Decision
from bot.records import ChatRef, Clarification

logger = logging.getLogger(__name__)


class CancelReason(StrEnum):
    STOP = "stopped"
    INTERRUPT = "interrupted"
    SHUTDOWN = "shutdown"
    TIMEOUT = "timeout"
    LOST = "lost"
    """Another replica took the chat over (``ChatFence``): nothing more is sent here."""
    REVISED = "revised"
    """A message of the turn was edited (or one of several withdrawn): it runs again."""
    RECALLED = "withdrawn"
    """The turn's message was recalled: it ends without a word, its placeholder deleted."""
    YIELD = "yielded"
    """A human replied in the thread (design §22): it ends without a word."""
    MUTE = "muted"
    """The conversation was muted (``/mute``): it ends without a word."""
    HANDOFF = "handed off"
    """The agent handed the conversation to a human: it ends with ``CancelToken.note``."""


def _no_lane(_reason: CancelReason, _note: str | None) -> tuple[bool, list[TurnRequest]]:
    return False, []


@dataclass(slots=True)
class CancelToken:
    """Why a running turn was cancelled; set just before ``Task.cancel()``."""

    reason: CancelReason | None = None
    note: str | None = None
    """What a turn ended by a handoff posts instead of its answer."""
    quiet: Quiet = _no_lane
    """``Lanes.quiet`` bound to the turn's own lane: what the turn itself calls to end (the
    agent's handoff, design §22)."""


LaneWork = Callable[[], Coroutine[object, object, None]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Resumption:
    """A run paused for approvals going on with the decisions made (design §24), one per
    action in the run's order."""

    run_id: str
    thread_id: str
    asker_id: str
    decisions: tuple[Decision, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnRequest:
    """Work for one lane: inbound messages, the answer to a pending question, or a slow
    command (``work``) that must run in the conversation's order but is no agent run."""

    key: ConversationKey
    destination: Destination
    items: tuple[Accepted, ...]
    answered: Clarification | None = None
    answer: str | None = None
    resumed: Resumption | None = None
    work: LaneWork | None = None
    restarted: bool = False
    """A turn cancelled by an edit runs again: it takes over the first run's placeholder."""
    label: str = ""
    """Put before the answer (an answer to an edited message says so, design §21)."""
    context: tuple[HeardMessage, ...] = ()
    """Group messages heard before these, for the agent (``group_policy: listen``)."""

    @property
    def mergeable(self) -> bool:
        return self.answered is None and self.resumed is None and self.work is None


def _carrying(request: TurnRequest, message_id: str) -> Accepted | None:
    """The item of ``request`` that is ``message_id``; an answer or a command is no text
    that an edit could change."""
    if not request.mergeable:
        return None
    return next((item for item in request.items if item.message.message_id == message_id), None)


def merge(requests: list[TurnRequest]) -> TurnRequest:
    """Several queued messages become one turn, in arrival order (design §5 queue policy)."""
    last = requests[-1]
    items = tuple(item for request in requests for item in request.items)
    label = next((request.label for request in requests if request.label), "")
    context = tuple(heard for request in requests for heard in request.context)
    return TurnRequest(
        key=last.key, destination=last.destination, items=items, label=label, context=context
    )


class Revised(StrEnum):
    """Where an edited or withdrawn message was (``Lanes.revise``)."""

    QUEUED = "queued"
    RUNNING = "running"
    UNCHANGED = "unchanged"
    """Found, and the rewrite returned the request as it was: nothing to do."""
    ABSENT = "absent"


Quiet = Callable[[CancelReason, str | None], tuple[bool, list[TurnRequest]]]
"""End a lane's running agent turn for a reason (with a note) and drop its queued messages:
(a turn was cancelled, the requests dropped)."""

Rewrite = Callable[[TurnRequest, Accepted], TurnRequest | None]
"""The request with the message found in it edited or taken out; ``None``: nothing left."""


class SubmitOutcome(StrEnum):
    STARTED = "started"
    QUEUED = "queued"
    FOLLOWS = "follows"
    """Waits only for a command that is finishing (``/new``): no busy policy, no notice."""
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
    """Runs the lane's turns one after another, itself: no task per turn."""
    running: bool = False
    """A turn is in progress on the driver (cancelling the driver cancels just the turn)."""
    commanding: bool = False
    """What runs is a slow command (``TurnRequest.work``), not an agent turn."""
    token: CancelToken = field(default_factory=CancelToken)
    current: TurnRequest | None = None
    """The request whose turn runs now."""


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
        if lane.running and lane.commanding:
            lane.pending.append(request)
            return SubmitOutcome.FOLLOWS
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

    def running_request(self, key: ConversationKey) -> TurnRequest | None:
        """The request whose agent turn runs in ``key``'s lane now (not a slow command)."""
        lane = self._lanes.get(key)
        if lane is None or not lane.running or lane.commanding or lane.token.reason is not None:
            return None
        return lane.current

    def quiet(
        self, key: ConversationKey, reason: CancelReason, note: str | None = None
    ) -> tuple[bool, list[TurnRequest]]:
        """End the key's running agent turn for ``reason`` and drop its queued messages
        (design §22); returns (a turn was cancelled, the requests dropped)."""
        lane = self._lanes.get(key)
        if lane is None:
            return False, []
        return self._quiet(lane, reason, note)

    def _quiet(
        self, lane: _Lane, reason: CancelReason, note: str | None
    ) -> tuple[bool, list[TurnRequest]]:
        cleared = [request for request in lane.pending if request.mergeable]
        for request in cleared:
            lane.pending.remove(request)
        running = self.running_request(lane.key) is not None
        if running:
            lane.token.note = note
            self._cancel_turn(lane, reason)
        return running, cleared

    def revise(
        self, chat: ChatRef, message_id: str, rewrite: Rewrite
    ) -> tuple[Revised, Accepted | None]:
        """Apply an edit or a recall of ``message_id`` to the work in hand (design §21):
        a queued request is rewritten in place; a running turn is cancelled and what is left
        of it runs next, first, as a restart. Returns where the message was, and its item."""
        for lane in self._lanes.values():
            if ChatRef(lane.key.channel, lane.key.account_id, lane.key.chat_id) != chat:
                continue
            for index, request in enumerate(lane.pending):
                found = _carrying(request, message_id)
                if found is not None:
                    revised = rewrite(request, found)
                    if revised is request:
                        return Revised.UNCHANGED, found
                    if revised is None:
                        del lane.pending[index]
                    else:
                        lane.pending[index] = revised
                    return Revised.QUEUED, found
            current = self.running_request(lane.key)
            found = _carrying(current, message_id) if current is not None else None
            if current is not None and found is not None:
                revised = rewrite(current, found)
                if revised is current:
                    return Revised.UNCHANGED, found
                if revised is not None:
                    lane.pending.appendleft(replace(revised, restarted=True))
                reason = CancelReason.RECALLED if revised is None else CancelReason.REVISED
                self._cancel_turn(lane, reason)
                return Revised.RUNNING, found
        return Revised.ABSENT, None

    def drop_chats(self, chats: Collection[ChatRef]) -> None:
        """Chats another replica took over: their running turns end without a word and their
        queued requests are forgotten (journaled, they are the new holder's now)."""
        for lane in self._lanes.values():
            key = lane.key
            if ChatRef(key.channel, key.account_id, key.chat_id) in chats:
                lane.pending.clear()
                self._cancel_turn(lane, CancelReason.LOST)

    def _cancel_turn(self, lane: _Lane, reason: CancelReason) -> None:
        if lane.running and lane.driver is not None and lane.token.reason is None:
            lane.token.reason = reason
            lane.driver.cancel()

    async def _drive(self, lane: _Lane) -> None:
        try:
            while lane.pending:
                request = self._next(lane)
                if request.work is not None:
                    await self._turn(lane, request)  # no agent run: takes no global slot
                    continue
                async with self._slots:
                    await self._turn(lane, request)
        finally:
            lane.driver = None
            lane.running = False
            if not lane.pending:
                self._lanes.pop(lane.key, None)
            if not any(lane.driver for lane in self._lanes.values()):
                self._idle.set()

    async def _turn(self, lane: _Lane, request: TurnRequest) -> None:
        """Run one turn on the driver; a cancellation of the turn ends here, not the driver."""
        token = lane.token = CancelToken(quiet=functools.partial(self._quiet, lane))
        lane.running = True
        lane.current = request
        lane.commanding = request.work is not None
        try:
            await (request.work() if request.work is not None else self._runner(request, token))
        except asyncio.CancelledError:
            if token.reason is None:
                raise  # the driver itself is being cancelled
            task = asyncio.current_task()
            while task is not None and task.cancelling():
                task.uncancel()
        except Exception:
            logger.exception("turn failed")
        finally:
            lane.running = lane.commanding = False
            lane.current = None

    @staticmethod
    def _next(lane: _Lane) -> TurnRequest:
        first = lane.pending.popleft()
        if not first.mergeable or first.restarted:
            return first  # a restart keeps its turn's placeholder: nothing merges into it
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
        running = [lane.driver for lane in self._lanes.values() if lane.running and lane.driver]
        if running:
            await asyncio.wait(running, timeout=grace_s)
        cancelled = [lane.driver for lane in self._lanes.values() if lane.running and lane.driver]
        for lane in list(self._lanes.values()):
            self._cancel_turn(lane, CancelReason.SHUTDOWN)
        if cancelled:
            await asyncio.wait(cancelled)  # each finishes its turn visibly, then stops
        drivers = [lane.driver for lane in self._lanes.values() if lane.driver is not None]
        for driver in drivers:
            driver.cancel()
        await asyncio.gather(*drivers, return_exceptions=True)
        return leftovers
