"""Inbound → an ordered list of steps → lane (design §5, §7, §9, §10, §21, §22).

One dispatcher consumes the bus in order; everything it does per message is a few store
lookups, so it never waits on an agent. Each message goes down the steps ``route_steps``
declares, top to bottom, until one handles it (``bot.pipeline.route``); turns then run in
their conversation's lane. A feature adds a step to that list, not a branch to the router.
"""

from __future__ import annotations

import logging

from typing_extensions import override

from bot.delivery.outbox import Outbox
from bot.metrics import Counters
from bot.pipeline.bus import Accepted, BusClosed, InboundBus
from bot.pipeline.group_context import GroupContext
from bot.pipeline.journal import Journal
from bot.pipeline.lanes import TurnRequest
from bot.pipeline.route import RouteActions, RouteStep, Routing
from bot.pipeline.sessions import Sessions, destination_for
from bot.ports import Store

logger = logging.getLogger(__name__)

ROUTING_ERROR = "routing_error"
"""The outcome of a message whose routing raised (its journal entry ends as failed)."""


class Router:
    """Runs each message through the route's steps (their order: ``bot.kernel.route``)."""

    def __init__(
        self, bus: InboundBus, store: Store, counters: Counters, steps: tuple[RouteStep, ...]
    ) -> None:
        self._bus = bus
        self._store = store
        self._counters = counters
        self.steps = steps

    async def run(self) -> None:
        """Dispatch bus items until the bus closes."""
        while True:
            try:
                item = await self._bus.get()
            except BusClosed:
                return
            outcome: str = ROUTING_ERROR
            try:
                outcome = await self.handle(item)
            except Exception:
                logger.exception("failed to route message correlation=%s", item.correlation_id)
                await Journal(self._store.inbound).failed(item.entry_id, "routing error")
            finally:
                # Once per routed message, after all its effects: tests wait on this count.
                self._counters.inbound(item.message.channel, outcome)

    async def handle(self, item: Accepted) -> str:
        """Route one message; returns its outcome (the ``outcome`` label of the metric)."""
        ctx = Routing()
        for step in self.steps:
            if (outcome := await step.route(item, ctx)) is not None:
                return outcome
        raise RuntimeError(f"no route step handled message correlation={item.correlation_id}")


class Reachable(RouteStep):
    """A chat that wrote to us again can be tried again after forbidden / not found."""

    def __init__(self, outbox: Outbox) -> None:
        self._outbox = outbox

    @override
    async def route(self, item: Accepted, ctx: Routing) -> str | None:
        message = item.message
        self._outbox.mark_reachable((message.channel, message.account_id, message.chat_id))
        return None


class ConversationKeys(RouteStep):
    """Finds the conversation an addressed message continues (``Routing.key``)."""

    def __init__(self, sessions: Sessions) -> None:
        self._sessions = sessions

    @override
    async def route(self, item: Accepted, ctx: Routing) -> str | None:
        ctx.key = await self._sessions.key_for(item.message)
        return None


class SubmitTurn(RouteStep):
    """The last step: a turn in the message's conversation, with the chatter heard before it."""

    def __init__(self, heard: GroupContext, actions: RouteActions) -> None:
        self._heard = heard
        self._actions = actions

    @override
    async def route(self, item: Accepted, ctx: Routing) -> str | None:
        message, key = item.message, ctx.conversation()
        request = TurnRequest(
            key=key,
            destination=destination_for(message, key),
            items=(item,),
            context=self._heard.take(message),
        )
        return await self._actions.submit(item, request)
