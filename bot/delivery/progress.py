"""Streaming progress: a lazy placeholder edited in place, throttled (design §8 Streaming).

The placeholder is created on the first text through the outbox (so a crash leaves a record
of it) and then edited directly. Progress is best effort: every call (the placeholder as an
outbox row, each edit, each typing indicator) goes only when the shared limiter has room now,
so it is dropped first under pressure, and its failures are classified like a row's
(``SendFailures``), so a 429 on an edit blocks its chat for the finals too. Progress is never
retried, and nothing it does holds back the final. Platforms without edits get a typing
indicator only and see the final answer when it is ready.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

from bot.delivery.chunking import measure
from bot.delivery.failures import PERMANENT, SendFailures
from bot.delivery.ratelimit import RateLimiter
from bot.delivery.replies import ReplyContext
from bot.errors import SendError
from bot.fleet.fence import ChatFence
from bot.messages import ChatType, OutboundKind, OutboundText, RenderMode, SentRef, TextEdit
from bot.metrics import Counters
from bot.ports import Channel
from bot.records import ChatRef, OutboxItem

logger = logging.getLogger(__name__)

TYPING_REFRESH_S = 4.0
PLACEHOLDER_WAIT_S = 10.0
QUIET_START_S = 1.0
"""Nothing is shown for the first second (about what still reads as an immediate reply): an
answer ready by then arrives as one message, with no typing call and no placeholder to edit,
one send instead of three against the bot's rate budget (a 0.5 s model's answers
went out as typing + placeholder + edit)."""
OutboxSend = Callable[[OutboxItem], Awaitable[SentRef | None]]
"""Record a delivery and wait for its first attempt (``Outbox.send_now``)."""
CURSOR = " ▍"
RATE_LIMIT_FALLBACK_S = 1.0
"""How long a 429 that names no ``retry_after`` blocks the chat (a row's first backoff step)."""


class PlaceholderOutbox(Protocol):
    """What the stream's placeholder needs of the outbox (``Outbox``)."""

    def send_now(self, item: OutboxItem) -> Awaitable[SentRef | None]:
        """Record a delivery and wait for its first attempt."""
        ...

    def withdraw(self, item: OutboxItem) -> Awaitable[SentRef | None]:
        """Take back a delivery not sent yet, or learn what it sent."""
        ...


class ProgressCalls:
    """The direct progress calls (edits, typing): paced, and failures classified as a row's.

    A permanent failure (forbidden, not found, credentials refused) stops them: the final
    row meets the same failure and deals with it as the outbox does.
    """

    def __init__(
        self,
        channel: Channel,
        limiter: RateLimiter,
        ctx: ReplyContext,
        failures: SendFailures,
        fence: ChatFence | None = None,
    ) -> None:
        self._channel = channel
        self._limiter = limiter
        self._destination = ctx.destination
        self._failures = failures
        self._fence = fence
        self.stopped = False

    async def _held(self) -> bool:
        """Whether this replica still holds the chat (``ChatFence``); progress stops if not."""
        dest = self._destination
        chat = ChatRef(dest.channel, dest.account_id, dest.chat_id)
        if self._fence is None or await self._fence.holds(chat, "progress"):
            return True
        self.stopped = True
        return False

    def may_send(self) -> bool:
        """Whether an edit or a typing indicator may go now (it reserves nothing a final
        would wait for); no while its chat waits (a 429, a final queued ahead)."""
        dest = self._destination
        return self._limiter.try_acquire((dest.channel, dest.account_id, dest.chat_id))

    async def edit(self, message_id: str, text: str) -> bool:
        """Edit the placeholder; ``False`` if the edit failed (it is dropped, not retried)."""
        edit = TextEdit(
            destination=self._destination,
            message_id=message_id,
            text=text,
            kind=OutboundKind.PROGRESS,
            render=RenderMode.PLAIN,
        )
        if not await self._held():
            return False
        try:
            await self._channel.edit_text(edit)
        except SendError as exc:
            self._failed(exc, "progress edit")
            return False
        return True

    async def typing(self) -> None:
        """Show "typing" if the chat may take it now (else it is skipped this time)."""
        if not self.may_send() or not await self._held():
            return
        try:
            await self._channel.show_typing(self._destination)
        except SendError as exc:
            self._failed(exc, "typing")

    def _failed(self, exc: SendError, what: str) -> None:
        dest = self._destination
        key = (dest.channel, dest.account_id, dest.chat_id)
        self._failures.note(key, exc, what=what, fallback_wait_s=RATE_LIMIT_FALLBACK_S)
        if exc.kind in PERMANENT:
            logger.info("progress stopped chat=%s: %s", dest.chat_id, exc.kind)
            self.stopped = True


class _Placeholder:
    """The stream's placeholder message: recorded and sent through the outbox, then edited."""

    def __init__(self, outbox: PlaceholderOutbox, ctx: ReplyContext) -> None:
        self._outbox = outbox
        self._ctx = ctx
        self.item: OutboxItem | None = None
        """Its delivery once it was recorded; taken back if it never arrived."""
        self._creating: asyncio.Task[None] | None = None
        self.message_id: str | None = None
        self.shown = ""
        self.ready = asyncio.Event()

    async def open(self, text: str) -> None:
        """Send it (shielded: ``settle`` decides what becomes of a send in flight)."""
        name = f"placeholder:{self._ctx.destination.chat_id}"
        self._creating = asyncio.create_task(self._create(text), name=name)
        await asyncio.shield(self._creating)

    async def _create(self, text: str) -> None:
        delivery = OutboundText(
            destination=self._ctx.destination,
            text=text,
            kind=OutboundKind.PROGRESS,
            reply_to=self._ctx.reply_to,
            render=RenderMode.PLAIN,
        )
        item = self.item = self._ctx.item(0, delivery)
        try:
            async with asyncio.timeout(PLACEHOLDER_WAIT_S):
                ref = await self._outbox.send_now(item)
        except TimeoutError:
            return  # the chat is held (rate limit, parked channel); ``settle`` takes it back
        if ref is not None and ref.message_ids:
            self.message_id = ref.message_ids[0]
            self.shown = text
            self.ready.set()

    async def settle(self) -> str | None:
        """Stop sending it; one that has not arrived is taken back from the outbox, or, if it
        went out meanwhile, named for the final to edit. Its message id, if any."""
        if self._creating is not None:
            self._creating.cancel()
            await asyncio.wait([self._creating])
        if self.message_id is None and self.item is not None:
            sent = await self._outbox.withdraw(self.item)
            if sent is not None and sent.message_ids:
                self.message_id = sent.message_ids[0]
        return self.message_id


class ProgressStream:
    def __init__(  # noqa: PLR0913 - the stream's channel, outbox, pacing, context and options
        self,
        channel: Channel,
        outbox: PlaceholderOutbox,
        limiter: RateLimiter,
        ctx: ReplyContext,
        *,
        counters: Counters | None = None,
        fence: ChatFence | None = None,
    ) -> None:
        """``fence``: on a shared store, progress goes only while this replica holds the chat."""
        self._channel = channel
        self._ctx = ctx
        failures = SendFailures(limiter, counters)
        self._calls = ProgressCalls(channel, limiter, ctx, failures, fence)
        self._placeholder = _Placeholder(outbox, ctx)
        self._parts: list[str] = []
        """The streamed text in pieces; joined when read (``+=`` is quadratic on long streams)."""
        self._changed = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._quiet: asyncio.TimerHandle | None = None

    @property
    def text(self) -> str:
        if len(self._parts) > 1:
            self._parts[:] = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    @property
    def placeholder_id(self) -> str | None:
        return self._placeholder.message_id

    @property
    def placeholder_key(self) -> str | None:
        """The idempotency key of the placeholder this stream sent itself (not one it
        adopted), if it sent one."""
        item = self._placeholder.item
        return item.idempotency_key if item is not None else None

    @property
    def _interval(self) -> float:
        caps = self._channel.capabilities
        group = self._ctx.destination.chat_type is ChatType.GROUP
        return caps.progress_interval_group_s if group else caps.progress_interval_dm_s

    def start(self) -> None:
        """Begin showing progress once the quiet start has passed (a turn that ends sooner
        costs one timer, no tasks)."""
        quiet_s = min(QUIET_START_S, self._interval)
        self._quiet = asyncio.get_running_loop().call_later(quiet_s, self._begin)

    def _begin(self) -> None:
        self._quiet = None
        caps = self._channel.capabilities
        name = self._ctx.destination.chat_id
        if caps.typing and not (caps.edits and self._parts):
            # Text already streamed: its placeholder goes out now and says more than "typing"
            # would (a turn slowed by a busy loop would otherwise cost one more request).
            self._tasks.append(asyncio.create_task(self._typing(), name=f"typing:{name}"))
        if caps.edits:
            self._tasks.append(asyncio.create_task(self._edits(), name=f"progress:{name}"))

    async def adopt(self, message_id: str, text: str) -> None:
        """Stream into ``message_id``, a placeholder an earlier run of this turn left (a
        restart after an edit, design §21), shown with ``text`` until new text arrives."""
        placeholder = self._placeholder
        placeholder.message_id = message_id
        placeholder.ready.set()
        if await self._calls.edit(message_id, text):
            placeholder.shown = text

    def add_text(self, delta: str) -> None:
        self._parts.append(delta)
        self._changed.set()

    async def close(self) -> str | None:
        """Stop streaming; returns the placeholder id for the final edit, if one exists.

        A placeholder that has not arrived yet (its chat is rate-limited, its channel
        reconnecting) is taken back from the outbox, or, if it is being sent right now, waited
        for: the final edit then replaces it. Never is a "thinking" placeholder left behind.
        """
        if self._quiet is not None:
            self._quiet.cancel()
            self._quiet = None
        placeholder_id = await self._placeholder.settle()
        for task in self._tasks:
            task.cancel()
        results = await asyncio.gather(*self._tasks, return_exceptions=True)
        for task, result in zip(self._tasks, results, strict=True):
            if isinstance(result, Exception):
                logger.error("progress task %s failed", task.get_name(), exc_info=result)
        self._tasks.clear()
        return placeholder_id

    async def _typing(self) -> None:
        """Show "typing" until visible text exists, refreshed before the platform drops it."""
        while self._placeholder.message_id is None and not self._calls.stopped:
            await self._calls.typing()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(TYPING_REFRESH_S):
                    await self._placeholder.ready.wait()

    async def _edits(self) -> None:
        last_edit = 0.0
        while not self._calls.stopped:
            await self._changed.wait()
            self._changed.clear()
            if self._placeholder.message_id is None:
                await self._placeholder.open(self._visible())
                last_edit = time.monotonic()
                continue
            wait = last_edit + self._interval - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            if not await self._edit():
                self._changed.set()
                await asyncio.sleep(self._interval)
            last_edit = time.monotonic()

    def _visible(self) -> str:
        caps = self._channel.capabilities
        text = self.text.strip() + CURSOR
        while measure(text, caps.text_unit) > caps.text_limit and len(text) > 1:
            text = text[: max(1, len(text) * 9 // 10)]
        return text

    async def _edit(self) -> bool:
        """Show the latest text; ``False`` when the rate limiter said not now."""
        placeholder = self._placeholder
        if placeholder.message_id is None:
            return True
        text = self._visible()
        if text == placeholder.shown:
            return True
        if not self._calls.may_send():
            return False
        if await self._calls.edit(placeholder.message_id, text):
            placeholder.shown = text
        return True
