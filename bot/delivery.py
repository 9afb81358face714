"""The outbox worker: every reply is recorded, then sent in order per chat, retried by kind.

Operations for one chat go out strictly in the order they were recorded (text before files,
chunk 1 before chunk 2); a row that must wait holds back the rows behind it. Chats are
independent of each other. Errors arrive already classified by the adapter (SPEC §8).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from bot.backoff import Backoff
from bot.errors import SendError, SendErrorKind, TransientSendError
from bot.hub import ChannelHub, ChannelState
from bot.messages import (
    Delivery,
    OutboundFile,
    OutboundKind,
    OutboundText,
    ReactionMark,
    RenderMode,
    SentRef,
    TextEdit,
    utc_now,
)
from bot.observe import Counters
from bot.ports import Channel, Store
from bot.ratelimit import DestinationKey, RateLimiter
from bot.records import ATTEMPT_SENT, MessageLink, OutboxItem, OutboxRow, OutboxState

logger = logging.getLogger(__name__)

PARKED_RETRY = timedelta(seconds=60)
IDLE_POLL_S = 30.0


def destination_key(delivery: Delivery) -> DestinationKey:
    dest = delivery.destination
    return (dest.channel, dest.account_id, dest.chat_id)


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    max_attempts: int = 8
    backoff: Backoff = field(default_factory=lambda: Backoff(base_s=1.0, cap_s=300.0))
    clock: Callable[[], datetime] = utc_now


class Outbox:
    def __init__(
        self, store: Store, hub: ChannelHub, limiter: RateLimiter, counters: Counters,
        policy: RetryPolicy,
    ) -> None:  # fmt: skip
        self._store = store
        self._hub = hub
        self._limiter = limiter
        self._counters = counters
        self._max_attempts = policy.max_attempts
        self._backoff = policy.backoff
        self._clock = policy.clock
        self._wake = asyncio.Event()
        self._changed = asyncio.Event()
        self._active: dict[DestinationKey, asyncio.Task[None]] = {}
        self._waiters: dict[int, asyncio.Future[SentRef | None]] = {}
        self._unreachable: set[DestinationKey] = set()

    # ------------------------------------------------------------------ producers

    async def submit(self, items: Sequence[OutboxItem]) -> list[int]:
        """Record deliveries durably, then let the worker send them."""
        if not items:
            return []
        row_ids = await self._store.outbox.enqueue(items)
        self._wake.set()
        return row_ids

    async def send_now(self, item: OutboxItem) -> SentRef | None:
        """Record and wait for the first attempt; ``None`` if it failed or will retry later.

        Callers bound the wait with ``asyncio.timeout``; the row stays in the outbox either way.
        """
        (row_id,) = await self._store.outbox.enqueue([item])
        row = await self._store.outbox.get(row_id)
        if row is not None and row.state is OutboxState.SENT:
            return SentRef(message_ids=row.sent_message_ids)
        future: asyncio.Future[SentRef | None] = asyncio.get_running_loop().create_future()
        self._waiters[row_id] = future
        self._wake.set()
        try:
            return await future
        finally:
            self._waiters.pop(row_id, None)

    def mark_reachable(self, key: DestinationKey) -> None:
        """A chat that wrote to us again can be tried again after forbidden/not found."""
        self._unreachable.discard(key)

    # ------------------------------------------------------------------ worker

    async def run(self) -> None:
        """Send due rows until cancelled."""
        while True:
            self._wake.clear()
            await self._dispatch_due()
            await self._sleep_until_due()

    async def _dispatch_due(self) -> None:
        rows = await self._store.outbox.due(self._clock(), limit=500)
        groups: dict[DestinationKey, list[OutboxRow]] = {}
        for row in rows:
            groups.setdefault(destination_key(row.item.delivery), []).append(row)
        for key, group in groups.items():
            if key in self._active:
                continue
            task = asyncio.create_task(self._send_group(group), name=f"outbox:{key[0]}:{key[2]}")
            self._active[key] = task
            task.add_done_callback(functools.partial(self._group_done, key))

    def _group_done(self, key: DestinationKey, _task: asyncio.Task[None]) -> None:
        self._active.pop(key, None)
        self._wake.set()
        self._changed.set()

    async def _sleep_until_due(self) -> None:
        timeout = IDLE_POLL_S
        next_due = await self._store.outbox.next_due_at()
        if next_due is not None:
            timeout = min(timeout, max(0.0, (next_due - self._clock()).total_seconds()))
        if timeout <= 0 and not self._active:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout if timeout > 0 else IDLE_POLL_S):
                await self._wake.wait()

    async def wait_idle(self) -> None:
        """Return once nothing is due or in flight (shutdown flush; bound it with a timeout)."""
        while self._active or await self._store.outbox.due(self._clock(), limit=1):
            self._changed.clear()
            self._wake.set()
            await self._changed.wait()

    async def cancel_active(self) -> None:
        tasks = list(self._active.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _send_group(self, rows: list[OutboxRow]) -> None:
        for row in rows:
            try:
                finished = await self._attempt(row)
            except Exception:
                logger.exception("outbox row %s failed unexpectedly", row.id)
                finished = await self._failed(row, TransientSendError("unexpected error"))
            if not finished:
                return

    # ------------------------------------------------------------------ one attempt

    async def _attempt(self, row: OutboxRow) -> bool:
        """Try one row; ``True`` when it is finished (sent or dead), ``False`` to hold the chat."""
        delivery = row.item.delivery
        key = destination_key(delivery)
        channel = self._hub.get(key[0])
        if channel is None:
            await self._finish_dead(row, f"channel {key[0]!r} is not running in this daemon")
            return True
        if key in self._unreachable:
            await self._finish_dead(row, "destination unreachable (forbidden or not found)")
            return True
        if not self._hub.usable(key[0]):
            await self._store.outbox.mark_retry(
                row.id,
                f"channel {key[0]} is {self._hub.state(key[0])}",
                self._clock() + PARKED_RETRY,
            )
            return False
        if not isinstance(delivery, ReactionMark):
            # Reactions are not messages: platforms rate-limit them separately.
            await self._limiter.acquire(key)
        try:
            ref = await _perform(channel, delivery)
        except SendError as exc:
            return await self._failed(row, exc)
        await self._store.outbox.mark_sent(row.id, ref.message_ids)
        await self._store.outbox.record_attempt(row.id, ATTEMPT_SENT, " ".join(ref.message_ids))
        await self._link(row.item, ref)
        self._resolve(row.id, ref)
        return True

    async def _failed(self, row: OutboxRow, exc: SendError) -> bool:
        delivery = row.item.delivery
        key = destination_key(delivery)
        await self._store.outbox.record_attempt(row.id, exc.kind, str(exc))
        self._counters.send_errors.labels(channel=key[0], kind=exc.kind).inc()
        logger.warning(
            "send failed row=%s channel=%s chat=%s kind=%s attempt=%s: %s",
            row.id, key[0], key[2], exc.kind, row.attempts + 1, exc,
        )  # fmt: skip
        if exc.kind is SendErrorKind.AUTH_FAILED:
            self._hub.set_state(key[0], ChannelState.PARKED, "auth_failed")
            await self._store.outbox.mark_retry(row.id, str(exc), self._clock() + PARKED_RETRY)
            return False
        if exc.kind in (SendErrorKind.FORBIDDEN, SendErrorKind.TARGET_NOT_FOUND):
            self._unreachable.add(key)
        attempts = row.attempts + 1
        delay = self._backoff.delay(attempts)
        if exc.kind is SendErrorKind.RATE_LIMITED:
            # Every send to this chat waits, also when this row (a progress update) is dropped.
            delay = exc.retry_after if exc.retry_after is not None else delay
            self._limiter.block(key, delay)
        last_try = attempts >= self._max_attempts or _kind_of(delivery) is OutboundKind.PROGRESS
        if not exc.retryable or last_try:
            await self._finish_dead(row, f"{exc.kind}: {exc}")
            return True
        await self._store.outbox.mark_retry(
            row.id, f"{exc.kind}: {exc}", self._clock() + timedelta(seconds=delay)
        )
        return False

    async def _finish_dead(self, row: OutboxRow, error: str) -> None:
        await self._store.outbox.mark_dead(row.id, error)
        logger.error(
            "delivery dead row=%s correlation=%s: %s", row.id, row.item.correlation_id, error
        )
        self._resolve(row.id, None)

    def _resolve(self, row_id: int, ref: SentRef | None) -> None:
        future = self._waiters.get(row_id)
        if future is not None and not future.done():
            future.set_result(ref)

    async def _link(self, item: OutboxItem, ref: SentRef) -> None:
        """Record every message the bot sent so replies to it find their thread (SPEC §4)."""
        if item.thread_id is None or isinstance(item.delivery, ReactionMark):
            return
        link = MessageLink(key=item.key, thread_id=item.thread_id)
        for message_id in ref.message_ids:
            await self._store.links.add(item.delivery.destination, message_id, link)


def _kind_of(delivery: Delivery) -> OutboundKind | None:
    if isinstance(delivery, OutboundText | TextEdit):
        return delivery.kind
    return None


async def _perform(channel: Channel, delivery: Delivery) -> SentRef:
    """One platform call, walking the rendering fallback ladder on ``invalid_request``."""
    try:
        return await _call(channel, delivery)
    except SendError as exc:
        if exc.kind is not SendErrorKind.INVALID_REQUEST:
            raise
        if not isinstance(delivery, OutboundText | TextEdit) or delivery.render is RenderMode.PLAIN:
            raise
        logger.info("%s rejected rich text (%s); retrying as plain text", channel.name, exc)
        return await _call(channel, replace(delivery, render=RenderMode.PLAIN))


async def _call(channel: Channel, delivery: Delivery) -> SentRef:
    if isinstance(delivery, OutboundText):
        return await channel.send_text(delivery)
    if isinstance(delivery, TextEdit):
        await channel.edit_text(delivery)
        return SentRef(message_ids=(delivery.message_id,))
    if isinstance(delivery, OutboundFile):
        return await channel.send_file(delivery)
    await channel.react(delivery)
    return SentRef(message_ids=())
