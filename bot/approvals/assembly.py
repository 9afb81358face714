"""The approvals feature assembled (design §24): the book, its hooks into a turn, its route
step and commands, and the sweep that expires requests and resumes runs decided elsewhere."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from bot.approvals.book import ApprovalBook
from bot.approvals.commands import register_approval_commands
from bot.approvals.metrics import ApprovalMetrics
from bot.approvals.step import ApprovalPresses, RoleOf, resume
from bot.commands.registry import CommandRegistry
from bot.config.settings import Settings
from bot.delivery.assembly import Delivery
from bot.hub import ChannelHub
from bot.pipeline.lanes import Lanes
from bot.pipeline.route import RouteActions
from bot.pipeline.turn_hooks import AskApproval
from bot.ports import Store
from bot.ports.approvals import ApprovalRun
from bot.records import ChatRef

logger = logging.getLogger(__name__)

SWEEP_INTERVAL_S = 2.0
"""How soon a decision from the console or the command line resumes its run, and how late
after its expiry a request is rejected."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Approvals:
    book: ApprovalBook
    delivery: Delivery

    @property
    def ask(self) -> AskApproval | None:
        """How a turn pauses for approvals (``None``: the store keeps none)."""
        return self.book.ask if self.book.available else None

    def register(self, registry: CommandRegistry, lanes: Lanes) -> None:
        register_approval_commands(registry, self.book if self.book.available else None, lanes)

    def step(self, lanes: Lanes, actions: RouteActions, role_of: RoleOf) -> ApprovalPresses:
        return ApprovalPresses(self.book, lanes, actions, role_of)

    async def run(self, lanes: Lanes) -> None:
        """The sweep, every ``SWEEP_INTERVAL_S`` (a kernel loop)."""
        while True:
            try:
                for run, resumption in await self.book.sweep(self._holds):
                    resume(lanes, run, resumption, ())
            except Exception:
                logger.exception("approvals sweep failed")
            await asyncio.sleep(SWEEP_INTERVAL_S)

    async def _holds(self, run: ApprovalRun) -> bool:
        chat = ChatRef(run.key.channel, run.key.account_id, run.key.chat_id)
        return await self.delivery.fence.holds(chat, "approval")


def assemble_approvals(
    settings: Callable[[], Settings], store: Store, hub: ChannelHub, delivery: Delivery
) -> Approvals:
    book = ApprovalBook(
        settings,
        store,
        delivery.outbox.submit,
        hub.capabilities_of,
        ApprovalMetrics(delivery.counters.registry),
    )
    return Approvals(book=book, delivery=delivery)
