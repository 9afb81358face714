"""Streaming progress: a lazy placeholder edited in place, throttled (design §8 Streaming).

The placeholder is created on the first text through the outbox (so a crash leaves a record
of it) and then edited directly: progress edits are best effort, rate-limited with
``try_acquire`` and dropped under pressure. Platforms without edits get a typing indicator
only and see the final answer when it is ready.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from bot.delivery.chunking import measure
from bot.delivery.ratelimit import RateLimiter
from bot.delivery.replies import ReplyContext
from bot.errors import SendError
from bot.messages import (
    ChatType,
    OutboundKind,
    OutboundText,
    RenderMode,
    SentRef,
    TextEdit,
)
from bot.ports import Channel
from bot.records import OutboxItem

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
OutboxWithdraw = Callable[[OutboxItem], Awaitable[SentRef | None]]
"""Take back a delivery not sent yet, or learn what it sent (``Outbox.withdraw``)."""
CURSOR = " ▍"


class ProgressStream:
    def __init__(
        self,
        channel: Channel,
        outbox: tuple[OutboxSend, OutboxWithdraw],
        limiter: RateLimiter,
        ctx: ReplyContext,
    ) -> None:
        self._channel = channel
        self._send, self._withdraw = outbox
        self._placeholder_item: OutboxItem | None = None
        """The placeholder's delivery once it was recorded; taken back if it never arrived."""
        self._limiter = limiter
        self._ctx = ctx
        caps = channel.capabilities
        group = ctx.destination.chat_type is ChatType.GROUP
        self._interval = caps.progress_interval_group_s if group else caps.progress_interval_dm_s
        self._quiet_s = min(QUIET_START_S, self._interval)
        self._parts: list[str] = []
        """The streamed text in pieces; joined when read (``+=`` is quadratic on long streams)."""
        self._shown = ""
        self._changed = asyncio.Event()
        self._placeholder_ready = asyncio.Event()
        self.placeholder_id: str | None = None
        self._creating: asyncio.Task[None] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._quiet: asyncio.TimerHandle | None = None

    @property
    def text(self) -> str:
        if len(self._parts) > 1:
            self._parts[:] = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    def start(self) -> None:
        """Begin showing progress once the quiet start has passed (a turn that ends sooner
        costs one timer, no tasks)."""
        self._quiet = asyncio.get_running_loop().call_later(self._quiet_s, self._begin)

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
        if self._creating is not None:
            self._creating.cancel()
            await asyncio.wait([self._creating])
        if self.placeholder_id is None and self._placeholder_item is not None:
            sent = await self._withdraw(self._placeholder_item)
            if sent is not None and sent.message_ids:
                self.placeholder_id = sent.message_ids[0]
        for task in self._tasks:
            task.cancel()
        results = await asyncio.gather(*self._tasks, return_exceptions=True)
        for task, result in zip(self._tasks, results, strict=True):
            if isinstance(result, Exception):
                logger.error("progress task %s failed", task.get_name(), exc_info=result)
        self._tasks.clear()
        return self.placeholder_id

    async def _typing(self) -> None:
        """Show "typing" until visible text exists, refreshed before the platform drops it."""
        while self.placeholder_id is None:
            with contextlib.suppress(SendError):
                await self._channel.show_typing(self._ctx.destination)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(TYPING_REFRESH_S):
                    await self._placeholder_ready.wait()

    async def _edits(self) -> None:
        last_edit = 0.0
        while True:
            await self._changed.wait()
            self._changed.clear()
            if self.placeholder_id is None:
                self._creating = asyncio.create_task(
                    self._create_placeholder(), name=f"placeholder:{self._ctx.destination.chat_id}"
                )
                await asyncio.shield(self._creating)
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

    async def _create_placeholder(self) -> None:
        text = self._visible()
        delivery = OutboundText(
            destination=self._ctx.destination,
            text=text,
            kind=OutboundKind.PROGRESS,
            reply_to=self._ctx.reply_to,
            render=RenderMode.PLAIN,
        )
        item = self._placeholder_item = self._ctx.item(0, delivery)
        try:
            async with asyncio.timeout(PLACEHOLDER_WAIT_S):
                ref = await self._send(item)
        except TimeoutError:
            return  # the chat is held (rate limit, parked channel); ``close`` takes it back
        if ref is not None and ref.message_ids:
            self.placeholder_id = ref.message_ids[0]
            self._shown = text
            self._placeholder_ready.set()

    async def _edit(self) -> bool:
        """Show the latest text; ``False`` when the rate limiter said not now."""
        if self.placeholder_id is None:
            return True
        text = self._visible()
        if text == self._shown:
            return True
        dest = self._ctx.destination
        if not self._limiter.try_acquire((dest.channel, dest.account_id, dest.chat_id)):
            return False
        edit = TextEdit(
            destination=self._ctx.destination,
            message_id=self.placeholder_id,
            text=text,
            kind=OutboundKind.PROGRESS,
            render=RenderMode.PLAIN,
        )
        try:
            await self._channel.edit_text(edit)
        except SendError as exc:
            logger.debug("progress edit dropped: %s", exc)
            return True
        self._shown = text
        return True
