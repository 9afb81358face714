"""Periodic housekeeping: expire unanswered questions, prune the inbound journal and the
files kept for pushes whose delivery is finished, fold and purge old usage rows."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import timedelta

from bot.config.settings import Settings
from bot.delivery.outbox import Outbox
from bot.hub import ChannelHub
from bot.messages import utc_now
from bot.pipeline.clarifications import Clarifications
from bot.ports import Store
from bot.push.spool import prune_push_spool
from bot.records import OutboxItem
from bot.usage.retention import keep_usage

logger = logging.getLogger(__name__)

SWEEP_INTERVAL_S = 15.0
PRUNE_EVERY_SWEEPS = 240


class Housekeeping:
    def __init__(
        self,
        settings: Callable[[], Settings],
        store: Store,
        hub: ChannelHub,
        outbox: Outbox,
        clarifications: Clarifications,
    ) -> None:
        self._settings = settings
        self._store = store
        self._hub = hub
        self._outbox = outbox
        self._clarifications = clarifications

    async def run(self) -> None:
        sweeps = 0
        while True:
            try:
                await self.expire_questions()
                if sweeps % PRUNE_EVERY_SWEEPS == 0:
                    await self.prune_journal()
                    await self.prune_push_files()
                    await keep_usage(self._store, self._settings(), utc_now())
            except Exception:
                logger.exception("housekeeping failed")
            sweeps += 1
            await asyncio.sleep(SWEEP_INTERVAL_S)

    async def expire_questions(self) -> int:
        expired = await self._clarifications.expire_due(self._hub.capabilities_of)
        items = [
            OutboxItem(
                idempotency_key=f"clarification/{clarification.id}/expired",
                delivery=edit,
                key=clarification.key,
                thread_id=clarification.thread_id,
                correlation_id=f"clarification-{clarification.id}",
            )
            for clarification, edit in expired
            if edit is not None
        ]
        await self._outbox.submit(items)
        return len(expired)

    async def prune_journal(self) -> int:
        days = self._settings().daemon.journal_retention_days
        removed = await self._store.inbound.prune(utc_now() - timedelta(days=days))
        if removed:
            logger.info("pruned %d journal rows older than %d days", removed, days)
        return removed

    async def prune_push_files(self) -> int:
        """Remove ``<workspace_dir>/pushes/<id>/`` of deliveries sent, purged, or dead for
        longer than the journal is kept (``bot.push.spool``)."""
        settings = self._settings()
        retention = timedelta(days=settings.daemon.journal_retention_days)
        return await prune_push_spool(
            self._store, settings.workspace_root, retention=retention, now=utc_now()
        )
