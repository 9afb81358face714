"""Inbound → an ordered list of steps → lane (design §5, §7, §9, §10, §21, §22).

One dispatcher consumes the bus in order; everything it does per message is a few store
lookups, so it never waits on an agent. Each message goes down the steps ``route_steps``
declares, top to bottom, until one handles it (``bot.pipeline.route``); turns then run in
their conversation's lane. A feature adds a step to that list, not a branch to the router.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass

from typing_extensions import override

from bot.commands.registry import CommandEnv
from bot.commands.routing import AnswerCommand, ChatCommands, ParseCommand, stop_conversation
from bot.config.settings import Settings
from bot.delivery.outbox import Outbox
from bot.hub import ChannelHub
from bot.metrics import Counters
from bot.pipeline.access import AccessControl, pairing_evictions
from bot.pipeline.addressing import Addressing, Unaddressed
from bot.pipeline.answers import Answers, StaleButtons
from bot.pipeline.bus import Accepted, BusClosed, InboundBus
from bot.pipeline.clarifications import Clarifications
from bot.pipeline.gates import AccessGate, IgnoredBots, PausedChannels
from bot.pipeline.group_context import GroupContext
from bot.pipeline.inbound_bounds import InboundBounds, RefuseOversize
from bot.pipeline.lanes import Lanes, TurnRequest
from bot.pipeline.push_step import OperatorPushes
from bot.pipeline.revisions import RevisionDeps, Revisions, RevisionStep
from bot.pipeline.route import RouteActions, RouteStep, Routing
from bot.pipeline.sessions import Sessions, destination_for
from bot.pipeline.takeover import Takeover
from bot.pipeline.takeover_step import HeldByHumans
from bot.ports import Store
from bot.records import InboundStatus

logger = logging.getLogger(__name__)

ROUTING_ERROR = "routing_error"
"""The outcome of a message whose routing raised (its journal entry ends as failed)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConversationParts:
    """What the route consults per conversation: its key, lane, open question and mute."""

    sessions: Sessions
    lanes: Lanes
    clarifications: Clarifications
    takeover: Takeover
    """Mutes and yields to humans (design §22)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RouterDeps:
    settings: Callable[[], Settings]
    store: Store
    bus: InboundBus
    hub: ChannelHub
    outbox: Outbox
    counters: Counters
    conversations: ConversationParts
    commands: ChatCommands


def route_steps(deps: RouterDeps) -> tuple[RouteStep, ...]:
    """The route, top to bottom: the first step with an outcome ends a message's route."""
    talk, settings, hub = deps.conversations, deps.settings, deps.hub
    actions = RouteActions(
        settings, deps.store, hub=hub, outbox=deps.outbox, lanes=talk.lanes, sessions=talk.sessions
    )
    addressing = Addressing(settings, talk.sessions, deps.store)
    bounds = InboundBounds(settings, talk.clarifications, addressing.addressed)
    oversize = RefuseOversize(bounds, actions)
    access = AccessControl(
        settings, deps.store, evictions=pairing_evictions(deps.counters.registry)
    )
    heard = talk.sessions.heard
    return (
        Reachable(deps.outbox),
        OperatorPushes(settings, hub, talk.sessions, talk.lanes, actions),
        IgnoredBots(settings, actions),
        RevisionStep(_revisions(deps, actions), oversize, heard),
        ParseCommand(hub, deps.commands.registry, access),
        PausedChannels(hub, actions),
        AccessGate(access, actions),
        oversize,
        AnswerCommand(_command_env(deps), deps.commands.registry, actions),
        Answers(settings, talk.clarifications, talk.lanes, talk.takeover.intercept),
        StaleButtons(actions),
        Unaddressed(addressing, heard, actions),
        ConversationKeys(talk.sessions),
        HeldByHumans(talk.takeover),
        SubmitTurn(heard, actions),
    )


class Router:
    def __init__(self, deps: RouterDeps) -> None:
        self._bus = deps.bus
        self._store = deps.store
        self._counters = deps.counters
        self.steps = route_steps(deps)

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
                await self._store.inbound.update(
                    item.entry_id, InboundStatus.FAILED, reason="routing error"
                )
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


def _revisions(deps: RouterDeps, actions: RouteActions) -> Revisions:
    talk = deps.conversations
    return Revisions(
        RevisionDeps(
            settings=deps.settings,
            store=deps.store,
            lanes=talk.lanes,
            outbox=deps.outbox,
            hub=deps.hub,
            sessions=talk.sessions,
            submit=actions.submit,
        )
    )


def _command_env(deps: RouterDeps) -> CommandEnv:
    talk = deps.conversations
    return CommandEnv(
        settings=deps.settings,
        store=deps.store,
        hub=deps.hub,
        lanes=talk.lanes,
        sessions=talk.sessions,
        bus=deps.bus,
        agent_description=deps.commands.agent_description,
        stop_conversation=functools.partial(stop_conversation, talk.lanes, deps.store),
        reload=deps.commands.reload,
        takeover=talk.takeover,
    )
