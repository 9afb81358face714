"""One attempt at one outbox row: the platform call, its rendering fallback, and what a failure
means for the row (sent, retry at a time, or dead letter).

Errors arrive already classified by the adapter (design §8); this module decides by kind and
never by platform. Scheduling — which row goes when, and keeping each chat in order — is the
outbox's (``bot.delivery.outbox``).
"""

from __future__ import annotations

import contextlib
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from bot.backoff import Backoff
from bot.delivery.bounded import RecentSet
from bot.delivery.failures import SendFailures
from bot.delivery.ratelimit import DestinationKey, RateLimiter
from bot.errors import MessageGone, SendError, SendErrorKind
from bot.fleet.fence import ChatFence
from bot.hub import ChannelHub, ChannelState
from bot.messages import (
    ChatType,
    Delivery,
    MessageRemoval,
    OutboundFile,
    OutboundKind,
    OutboundText,
    ReactionMark,
    RenderMode,
    SentRef,
    TextEdit,
    utc_now,
)
from bot.metrics import Counters, PushMetrics
from bot.ports import Channel, Store
from bot.ports.push import push_kind
from bot.records import ChatRef, OutboxRow

logger = logging.getLogger(__name__)

PARKED_RETRY = timedelta(seconds=60)
UNREACHABLE_REMEMBERED = 10_000


def destination_key(delivery: Delivery) -> DestinationKey:
    dest = delivery.destination
    return (dest.channel, dest.account_id, dest.chat_id)


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    max_attempts: int = 8
    backoff: Backoff = field(default_factory=lambda: Backoff(base_s=1.0, cap_s=300.0))
    clock: Callable[[], datetime] = utc_now


@dataclass(frozen=True, slots=True, kw_only=True)
class AttemptOutcome:
    """How an attempt left its row: finished (``sent``, or dead when ``sent`` is ``None``), or
    waiting for ``retry_at`` — until then its chat sends nothing after it."""

    finished: bool
    sent: SentRef | None = None
    retry_at: datetime | None = None


class Attempts:
    """Attempts rows one at a time and records each outcome in the store."""

    def __init__(  # noqa: PLR0913 - the kernel objects an attempt works with
        self,
        store: Store,
        hub: ChannelHub,
        limiter: RateLimiter,
        counters: Counters,
        policy: RetryPolicy,
        *,
        fence: ChatFence,
    ) -> None:
        self._store = store
        self._fence = fence
        self._hub = hub
        self._limiter = limiter
        self._failures = SendFailures(limiter, counters)
        self._pushes: PushMetrics = counters.pushes
        self._max_attempts = policy.max_attempts
        self._backoff = policy.backoff
        self._clock = policy.clock
        self._unreachable: RecentSet[DestinationKey] = RecentSet(UNREACHABLE_REMEMBERED)
        """Chats that refused us; the oldest are forgotten (one more try finds them again)."""

    def mark_reachable(self, key: DestinationKey) -> None:
        """A chat that wrote to us again can be tried again after forbidden/not found."""
        self._unreachable.discard(key)

    async def attempt(self, row: OutboxRow) -> AttemptOutcome:
        delivery = _keyed(row.item.delivery, row.item.idempotency_key)
        key = destination_key(delivery)
        channel = self._hub.get(key[0])
        if channel is None:
            return await self._dead(row, f"channel {key[0]!r} is not running in this daemon")
        held_back = await self._held_back(row, delivery, key)
        if held_back is not None:
            return held_back
        try:
            ref = await _perform(channel, delivery, row.item.idempotency_key)
        except SendError as exc:
            return await self.failed(row, exc)
        await self._store.outbox.mark_sent(row.id, ref.message_ids)
        self._count_push(row, "sent")
        return AttemptOutcome(finished=True, sent=ref)

    def _count_push(self, row: OutboxRow, outcome: str) -> None:
        """``switchboard_push_deliveries_total``: how the rows delivering pushes end."""
        kind = push_kind(row.item)
        if kind is not None:
            self._pushes.delivered(kind, outcome)

    async def _held_back(
        self, row: OutboxRow, delivery: Delivery, key: DestinationKey
    ) -> AttemptOutcome | None:
        """Why the row does not go now (unreachable, its channel parked, no budget left for
        progress, the chat no longer this replica's), or ``None`` once it may."""
        if key in self._unreachable:
            return await self._dead(row, "destination unreachable (forbidden or not found)")
        if not self._hub.usable(key[0]):
            reason = f"channel {key[0]} is {self._hub.state(key[0])}"
            return await self._retry_later(row, reason, self._clock() + PARKED_RETRY, counts=False)
        if not await self._paced(delivery, key):
            return await self._dead(row, "rate limit: the budget is kept for finals")
        if not await self._fence.holds(ChatRef(*key), "send"):
            return AttemptOutcome(finished=False)  # the chat's holder sends it (``ChatFence``)
        return None

    async def _paced(self, delivery: Delivery, key: DestinationKey) -> bool:
        """Wait for the send's slot; ``False`` for progress that may not go now."""
        if isinstance(delivery, ReactionMark | MessageRemoval):
            return True  # not messages: platforms rate-limit them separately
        group = delivery.destination.chat_type is ChatType.GROUP
        new_message = not isinstance(delivery, TextEdit)
        if _kind_of(delivery) is OutboundKind.PROGRESS:
            # A placeholder goes now or never: waiting would hold back the final behind it.
            return self._limiter.try_acquire(key, group=group, new_message=new_message)
        await self._limiter.acquire(key, group=group, new_message=new_message)
        return True

    async def failed(self, row: OutboxRow, exc: SendError) -> AttemptOutcome:
        """Record a failed attempt and decide: retry at a time, or dead letter."""
        delivery = row.item.delivery
        key = destination_key(delivery)
        await self._store.outbox.record_attempt(row.id, exc.kind, str(exc))
        # A rate limit says "later", not "failed": it costs no attempt and no backoff step.
        rate_limited = exc.kind is SendErrorKind.RATE_LIMITED
        attempts = row.attempts + (0 if rate_limited else 1)
        delay = self._backoff.delay(max(1, attempts))
        what = f"row={row.id} attempt={row.attempts + 1}"
        wait = self._failures.note(key, exc, what=what, fallback_wait_s=delay)
        if exc.kind is SendErrorKind.AUTH_FAILED:
            self._hub.set_state(key[0], ChannelState.PARKED, "auth_failed")
            at = self._clock() + PARKED_RETRY
            return await self._retry_later(row, str(exc), at, counts=False)
        if exc.kind in (SendErrorKind.FORBIDDEN, SendErrorKind.TARGET_NOT_FOUND):
            self._unreachable.add(key)
        if wait is not None:
            delay = wait + rate_limit_jitter(wait)
        last_try = attempts >= self._max_attempts or _kind_of(delivery) is OutboundKind.PROGRESS
        if not exc.retryable or last_try:
            return await self._dead(row, f"{exc.kind}: {exc}")
        retry_at = self._clock() + timedelta(seconds=delay)
        return await self._retry_later(row, f"{exc.kind}: {exc}", retry_at, counts=not rate_limited)

    async def _retry_later(
        self, row: OutboxRow, error: str, at: datetime, *, counts: bool = True
    ) -> AttemptOutcome:
        await self._store.outbox.mark_retry(row.id, error, at, counts=counts)
        return AttemptOutcome(finished=False, retry_at=at)

    async def _dead(self, row: OutboxRow, error: str) -> AttemptOutcome:
        await self._store.outbox.mark_dead(row.id, error)
        self._count_push(row, "dead")
        if _kind_of(row.item.delivery) is OutboundKind.PROGRESS:
            # Progress is the first thing dropped under pressure, by design (design §8).
            logger.info("progress update dropped row=%s: %s", row.id, error)
        else:
            logger.error(
                "delivery dead row=%s correlation=%s: %s", row.id, row.item.correlation_id, error
            )
        return AttemptOutcome(finished=True)


def rate_limit_jitter(wait_s: float) -> float:
    """A little extra wait after a rate limit (up to a tenth of it, at most two seconds), so
    chats that were limited together do not all retry in the same instant."""
    return _RNG.uniform(0.0, min(2.0, max(0.05, wait_s / 10)))


_RNG = random.Random()  # noqa: S311 - jitter, not cryptography


def _keyed(delivery: Delivery, dedupe_key: str) -> Delivery:
    """The delivery as attempted: a message carries its row's idempotency key as
    ``dedupe_key``, so a platform that dedupes sends sees a retry (even one by a later process)
    as the same message. Set here, at attempt time, rather than stored twice in the row."""
    if isinstance(delivery, OutboundText | OutboundFile):
        return replace(delivery, dedupe_key=dedupe_key)
    return delivery


def _kind_of(delivery: Delivery) -> OutboundKind | None:
    if isinstance(delivery, OutboundText | TextEdit):
        return delivery.kind
    return None


async def _perform(channel: Channel, delivery: Delivery, dedupe_key: str) -> SentRef:
    """One platform call, walking the rendering fallback ladder on ``invalid_request``; a
    final edit of a message that is gone is sent as a new message (under the row's key)."""
    try:
        return await _call(channel, delivery)
    except MessageGone:
        if not isinstance(delivery, TextEdit) or delivery.kind is OutboundKind.PROGRESS:
            raise
        logger.info("%s: message %s is gone; sending anew", channel.name, delivery.message_id)
        anew = OutboundText(
            destination=delivery.destination,
            text=delivery.text,
            kind=delivery.kind,
            buttons=delivery.buttons,
            render=delivery.render,
            dedupe_key=dedupe_key,
        )
        return await _perform(channel, anew, dedupe_key)
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
    if isinstance(delivery, MessageRemoval):
        with contextlib.suppress(MessageGone):  # gone already: what the removal wanted
            await channel.delete_message(delivery)
        return SentRef(message_ids=())
    await channel.react(delivery)
    return SentRef(message_ids=())
