"""The outbox: every reply is recorded, then sent in order per chat (design §8).

Operations for one chat go out strictly in the order they were recorded (text before files,
chunk 1 before chunk 2); a row that must wait holds back the rows behind it. Chats are
independent of each other. ``Outbox`` composes the parts that do this:

- ``ChatQueues`` (``outbox_queues``): each chat's sender task and the rows queued behind it;
- ``ChatWaits`` (``holds``): chats held back, by a retry or by crash recovery;
- ``AttemptWaiters`` (``outbox_waiters``): callers waiting for one row's attempt;
- ``PollLoop`` and ``PollTimes`` (``outbox_polls``): the worker and when it polls the store.

What one attempt does with a row (the call, the fallback ladder, retry or dead letter) is
``bot.delivery.attempt``.

Crash recovery may ``reserve`` a row an earlier process left (a placeholder it must finish
itself): its chat then sends nothing until the row is ``release``d, and recovery attempts it
with ``resend``, so the row still goes first in its chat.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import replace

from bot.delivery.attempt import AttemptOutcome, Attempts, RetryPolicy, destination_key
from bot.delivery.outbox_polls import IDLE_POLL_S, PollLoop, PollTimes
from bot.delivery.outbox_queues import ChatQueues
from bot.delivery.outbox_waiters import AttemptWaiters
from bot.delivery.ratelimit import DestinationKey, RateLimiter
from bot.delivery.waits import ChatWaits
from bot.errors import ChatLost, TransientSendError
from bot.fleet.fence import ChatFence
from bot.hub import ChannelHub
from bot.messages import Delivery, SentRef
from bot.metrics import Counters
from bot.ports import Store
from bot.records import ChatRef, OutboxItem, OutboxRow, OutboxState

__all__ = ["IDLE_POLL_S", "Outbox"]

logger = logging.getLogger(__name__)


class Outbox:
    def __init__(  # noqa: PLR0913 - the kernel objects it works with
        self,
        store: Store,
        hub: ChannelHub,
        limiter: RateLimiter,
        counters: Counters,
        policy: RetryPolicy,
        *,
        holder: str | None = None,
        fence: ChatFence | None = None,
    ) -> None:
        """``holder``: on a shared store, the replica whose chats this outbox sends; ``fence``
        (the kernel's, else one of its own) keeps it from sending or answering for chats it
        no longer holds."""
        self._store = store
        fence = fence or ChatFence(store.leases, holder or "", counters.replicas.fenced)
        self._fence = fence
        self._attempts = Attempts(store, hub, limiter, counters, policy, fence=fence)
        self._waiters = AttemptWaiters()
        self._poll_times = PollTimes(policy.clock)
        self._waits = ChatWaits(policy.clock, self._poll_times)
        self._queues = ChatQueues(self._waits, self._attempt, self._give_back)
        self._worker = PollLoop(
            store, self._poll_times, self._waits, self._queues, clock=policy.clock, holder=holder
        )

    # ------------------------------------------------------------------ producers

    async def submit(
        self, items: Sequence[OutboxItem], *, finishes: Sequence[int] = ()
    ) -> list[int]:
        """Record deliveries durably, then hand the new rows straight to the worker.

        ``finishes``: journal entries this reply answers, marked handled in the same write,
        which holds only while this replica holds the chat (else ``ChatLost``, nothing written).
        """
        if not items and not finishes:
            return []
        fence = (
            await self._fence.grant(ChatRef(*destination_key(items[0].delivery)))
            if (finishes and items)
            else None
        )
        try:
            rows = await self._store.outbox.enqueue_rows(items, finishes=finishes, fence=fence)
        except ChatLost:
            if fence is not None:
                self._fence.lost(fence.chat, "commit")
            raise
        self._worker.hand_over([row for row in rows if row.state is OutboxState.PENDING])
        return [row.id for row in rows]

    async def send_now(self, item: OutboxItem) -> SentRef | None:
        """Record and wait for the first attempt; ``None`` if it failed or will retry later.

        Callers bound the wait with ``asyncio.timeout``; the row stays in the outbox either way.
        """
        (row,) = await self._store.outbox.enqueue_rows([item])
        if self._waits.is_reserved(row):
            await self._waits.until_released(row)  # crash recovery's row (see ``reserve``)
            return None
        if row.state is OutboxState.SENT:
            return SentRef(message_ids=row.sent_message_ids)
        if row.state is OutboxState.DEAD:
            return None
        with self._waiters.waiting_for(row.id) as future:
            self._worker.hand_over([row])
            return await future

    async def withdraw(self, item: OutboxItem) -> SentRef | None:
        """Take back a delivery that is no longer wanted (a placeholder the final overtook).

        Not sent yet: it never will be (the row is marked dead) and ``None`` is returned. Being
        sent right now: its outcome is awaited. Sent: the message it made is returned, so the
        caller can finish it (edit it) instead of leaving it behind. A row crash recovery
        reserved is recovery's: ``None``, and the row is kept.
        """
        (row,) = await self._store.outbox.enqueue_rows([item])  # the row as it now stands
        if self._waits.is_reserved(row):
            return None
        if self._waiters.under_way(row.id):
            # Its call is out: what it made is the caller's to finish, whatever the store says
            # meanwhile (a replica that took the chat over may have withdrawn the row).
            with self._waiters.waiting_for(row.id) as future:
                sent_ref = await future
            if sent_ref is not None:
                return sent_ref
            row = await self._store.outbox.get(row.id) or row
        elif row.state is OutboxState.PENDING and self._queues.finished_recently(row.id):
            row = await self._store.outbox.get(row.id) or row  # its attempt ended meanwhile
        if row.state is not OutboxState.PENDING:
            sent = row.state is OutboxState.SENT
            return SentRef(message_ids=row.sent_message_ids) if sent else None
        self._queues.withdraw(row.id)
        await self._store.outbox.mark_dead(row.id, "withdrawn: superseded by a later delivery")
        return None

    def mark_reachable(self, key: DestinationKey) -> None:
        """A chat that wrote to us again can be tried again after forbidden/not found."""
        self._attempts.mark_reachable(key)

    # ------------------------------------------------------------------ crash recovery

    def reserve(self, row: OutboxRow) -> None:
        """Keep a row an earlier process left for crash recovery, which attempts it itself
        (``resend``): until ``release``, its chat sends nothing, not even that row. A re-run
        shares its turn's keys, and must neither take the row back nor edit its message before
        recovery has: ``withdraw`` of the key answers ``None`` at once, ``send_now`` once the
        row is released (callers bound the wait, as for a chat held by a retry). Call it
        before the worker runs, so no poll takes the row first."""
        self._waits.reserve(row)

    def release(self, row: OutboxRow) -> None:
        """Recovery is done with a reserved row (sent, dead, or left in the store); once its
        chat has no other, the chat's rows go out again, in order, from a fresh poll."""
        self._waits.release(row)

    def paused(self, keys: Sequence[DestinationKey]) -> AbstractContextManager[None]:
        """Send nothing of these chats inside the block (a takeover withdraws or reserves the
        placeholders the previous holder left first); their rows are polled after it."""
        return self._waits.paused(keys)

    def repoll(self) -> None:
        """Look at the store again soon (chats this replica just took over)."""
        self._poll_times.soon()

    async def resend(self, row: OutboxRow, delivery: Delivery) -> AttemptOutcome:
        """Attempt a reserved row once, sending ``delivery`` in place of what it recorded.

        The row keeps its id and idempotency key (so its ``dedupe_key``): a platform that
        dedupes sends answers with the message it took under that key. The outcome is recorded
        on the row as for any attempt; waiting for a retry is the caller's.
        """
        if destination_key(delivery) != destination_key(row.item.delivery):
            raise ValueError("a resend goes to the row's own chat")
        return await self._attempt(replace(row, item=replace(row.item, delivery=delivery)))

    async def _attempt(self, row: OutboxRow) -> AttemptOutcome:
        """One attempt, whose outcome goes to the callers waiting for the row."""
        with self._waiters.attempting(row.id):
            outcome = await self._guarded_attempt(row)
        self._waiters.resolve(row.id, outcome.sent)
        return outcome

    async def _guarded_attempt(self, row: OutboxRow) -> AttemptOutcome:
        """A bug in an attempt is logged and counted as a transient failure of the row."""
        try:
            return await self._attempts.attempt(row)
        except Exception:
            logger.exception("outbox row %s failed unexpectedly", row.id)
            return await self._attempts.failed(row, TransientSendError("unexpected error"))

    # ------------------------------------------------------------------ worker

    async def run(self) -> None:
        """Send rows until cancelled (``PollLoop``: rows handed over and rows polled)."""
        await self._worker.run()

    async def wait_idle(self) -> None:
        """Return once nothing is due or in flight (shutdown flush; bound it with a timeout)."""
        await self._worker.wait_idle()

    async def cancel_active(self) -> None:
        """Cancel the chats' senders at work (shutdown, after the flush)."""
        await self._queues.cancel()

    def _give_back(self, rows: list[OutboxRow], *, poll: bool) -> None:
        """A chat's sender finished (the worker is built after the queues it feeds)."""
        self._worker.give_back(rows, poll=poll)
