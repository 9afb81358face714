"""The route, top to bottom, in one list (design §5): the steps the pipeline and the features'
rooms plug in, in the order every message meets them."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from bot.approvals.assembly import Approvals
from bot.commands.registry import CommandEnv
from bot.commands.routing import AnswerCommand, ChatCommands, ParseCommand, stop_conversation
from bot.config.settings import Settings
from bot.delivery.outbox import Outbox
from bot.hub import ChannelHub
from bot.messages import utc_now
from bot.metrics import Counters
from bot.pipeline.access import AccessControl, pairing_evictions
from bot.pipeline.addressing import Addressing, Unaddressed
from bot.pipeline.answers import Answers, StaleButtons
from bot.pipeline.bus import InboundBus
from bot.pipeline.clarifications import Clarifications
from bot.pipeline.gates import AccessGate, IgnoredBots, PausedChannels
from bot.pipeline.inbound_bounds import InboundBounds, RefuseOversize
from bot.pipeline.lanes import Lanes
from bot.pipeline.revisions import RevisionDeps, Revisions, RevisionStep
from bot.pipeline.route import RouteActions, RouteStep
from bot.pipeline.router import ConversationKeys, Reachable, SubmitTurn
from bot.pipeline.sessions import Sessions
from bot.ports import Store
from bot.push.step import OperatorPushes
from bot.takeover.step import HeldByHumans
from bot.takeover.takeover import Takeover
from bot.usage.assembly import usage_gate


@dataclass(frozen=True, slots=True, kw_only=True)
class ConversationParts:
    """What the route consults per conversation: its key, lane, open question and mute."""

    sessions: Sessions
    lanes: Lanes
    clarifications: Clarifications


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


def route_steps(
    deps: RouterDeps,
    takeover: Takeover,
    approvals: Approvals,
    *,
    usage_clock: Callable[[], datetime] = utc_now,
) -> tuple[RouteStep, ...]:
    """The route, top to bottom: the first step with an outcome ends a message's route;
    ``usage_clock`` is now for the message rate and budgets."""
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
        approvals.step(talk.lanes, actions, access.role),
        AnswerCommand(_command_env(deps), deps.commands.registry, actions),
        Answers(settings, talk.clarifications, talk.lanes, takeover.intercept),
        StaleButtons(actions),
        Unaddressed(addressing, heard, actions),
        ConversationKeys(talk.sessions),
        HeldByHumans(takeover),
        usage_gate(settings, deps.store, role_of=access.role, actions=actions, clock=usage_clock),
        SubmitTurn(heard, actions),
    )


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
    )
