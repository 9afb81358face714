"""Long polling with the offset advanced only past updates the kernel has journaled (design §5).

Telegram forgets an update once a ``getUpdates`` call asks for a higher ``offset``. PTB's
``Updater`` raises the offset as soon as it has *queued* a batch, before any handler ran, so a
crash right then loses those updates. This loop calls ``bot.get_updates`` itself and moves
the offset past an update only after ``publish`` recorded it durably (or it was a duplicate
or carried nothing to act on); a whole batch is journaled in one write. An update the kernel
refuses (queue full, closing) stops the batch; it and the rest are fetched again after a
short pause.

Errors are handled like PTB's ``network_retry_loop``: ``RetryAfter`` waits as told,
``TimedOut`` retries at once, ``InvalidToken`` parks the channel (retried rarely), anything
else reconnects with capped, jittered backoff and reports itself to the channel's health;
its log is one traceback an outage, then a line a retry and one on recovery (``OutageLog``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from telegram import Bot, Update
from telegram import error as tg

from bot.backoff import Backoff
from bot.lifecycle import cancel_and_wait
from bot.ports import ChannelHealth
from bot.ports.channel import Exclusive
from channels.outage_log import OutageLog
from channels.telegram.errors import redact, retry_after_seconds

logger = logging.getLogger(__name__)

ALLOWED_UPDATES = ("message", "edited_message", "callback_query")
RECONNECT = Backoff(base_s=1.0, cap_s=30.0)
PARKED_RETRY_S = 600.0
REFUSED_PAUSE_S = 1.0
RETRY_AFTER_SLACK_S = 0.5

UpdatesHandler = Callable[[Sequence[Update]], Awaitable[int]]
"""Hands a batch to the kernel; returns how many leading updates Telegram may forget."""


class Poller:
    def __init__(  # noqa: PLR0913 - keyword-only settings; ``reconnect`` lets tests go fast
        self,
        bot: Bot,
        handle: UpdatesHandler,
        health: ChannelHealth,
        *,
        timeout_s: float,
        secret: str,
        reconnect: Backoff = RECONNECT,
    ) -> None:
        self._bot = bot
        self._handle = handle
        self._health = health
        self._timeout_s = timeout_s
        self._secret = secret
        self._reconnect = reconnect
        self.offset: int | None = None
        self._failures = 0
        self._outage = OutageLog(logger, "polling Telegram")

    async def run(self) -> None:
        """Poll until cancelled."""
        while True:
            updates = await self._fetch()
            if updates is not None:
                await self._deliver(updates)

    async def confirm(self) -> None:
        """Tell Telegram that everything handled so far may be forgotten (on stop)."""
        if self.offset is None:
            return
        try:
            await self._bot.get_updates(offset=self.offset, timeout=0, limit=1)
        except tg.TelegramError as exc:
            logger.info("could not confirm the last updates: %s", redact(exc.message, self._secret))

    async def _fetch(self) -> Sequence[Update] | None:
        try:
            updates = await self._bot.get_updates(
                offset=self.offset, timeout=int(self._timeout_s), allowed_updates=ALLOWED_UPDATES
            )
        except tg.RetryAfter as exc:
            await asyncio.sleep(retry_after_seconds(exc) + RETRY_AFTER_SLACK_S)
            return None
        except tg.TimedOut:
            return None
        except tg.InvalidToken:
            logger.error("Telegram rejected the bot token; polling parked")  # noqa: TRY400
            self._failures += 1
            self._health.auth_failed("Telegram rejected the bot token")
            await asyncio.sleep(PARKED_RETRY_S)
            return None
        except tg.TelegramError as exc:
            await self._lost(exc)
            return None
        if self._failures:
            self._failures = 0
            self._health.connected()
            if self._outage.failures:
                self._outage.ended()
            else:
                logger.info("polling Telegram again")  # after a refused token
        self._health.activity()
        return updates

    async def _lost(self, exc: tg.TelegramError) -> None:
        """Log (the traceback once an outage), report, and wait before the next poll."""
        self._failures += 1
        reason = redact(exc.message, self._secret)
        delay = self._reconnect.delay(self._failures)
        self._outage.failed(exc, retry_in=delay, detail=reason)
        self._health.disconnected(reason)
        await asyncio.sleep(delay)

    async def _deliver(self, updates: Sequence[Update]) -> None:
        if not updates:
            return
        try:
            handled = await self._handle(updates)
        except Exception:
            logger.exception("updates from %s could not be handed over", updates[0].update_id)
            handled = 0
        if handled:
            self.offset = updates[handled - 1].update_id + 1
        if handled < len(updates):
            await asyncio.sleep(REFUSED_PAUSE_S)


class ExclusivePolling:
    """The channel's polling task: a ``Poller`` run only while this daemon holds the bot's
    exclusive name; ``stop`` cancels it and confirms what was handled."""

    def __init__(
        self,
        handle: UpdatesHandler,
        health: ChannelHealth,
        exclusive: Exclusive,
        *,
        timeout_s: float,
        secret: str,
    ) -> None:
        self._handle = handle
        self._health = health
        self._exclusive = exclusive
        self._timeout_s = timeout_s
        self._secret = secret
        self._poller: Poller | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self, bot: Bot) -> None:
        self._poller = Poller(
            bot, self._handle, self._health, timeout_s=self._timeout_s, secret=self._secret
        )
        self._task = asyncio.create_task(
            self._poll_exclusively(self._poller, bot.id), name="channel:telegram:poll"
        )

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        await cancel_and_wait(task)
        if self._poller is not None:
            await self._poller.confirm()

    async def _poll_exclusively(self, poller: Poller, bot_id: int) -> None:
        """getUpdates allows one consumer per bot: among replicas of one store, poll only
        while holding the bot's exclusive name; the others stand by (still sending) and one
        takes over within about a second of the holder's death (design §11 "replicas")."""
        name = f"telegram:{bot_id}:getUpdates"
        while True:
            async with self._exclusive(name) as hold:
                polling = asyncio.create_task(poller.run(), name="channel:telegram:getUpdates")
                lost = asyncio.create_task(hold.wait_lost(), name="channel:telegram:hold")
                try:
                    await asyncio.wait({polling, lost}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for task in (polling, lost):
                        task.cancel()
                    await asyncio.gather(polling, lost, return_exceptions=True)
                error = polling.exception() if not polling.cancelled() else None
                if error is not None:
                    raise error
                logger.warning("telegram: lost the getUpdates hold; waiting to hold it again")
