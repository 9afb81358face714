"""Wiring of the kernel objects around a store, an agent and a set of channels."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

from bot.approvals.assembly import Approvals, assemble_approvals
from bot.commands import CommandRegistry, default_registry
from bot.commands.routing import ChatCommands
from bot.config.settings import Settings
from bot.delivery.assembly import Delivery, assemble_delivery
from bot.delivery.ratelimit import RateLimiter
from bot.fleet.assembly import FleetParts, assemble_fleet
from bot.fleet.ownership import Spawn
from bot.hub import ChannelHub, ChannelState
from bot.kernel.route import ConversationParts, RouterDeps, route_steps
from bot.messages import utc_now
from bot.metrics import Counters
from bot.ops.channel_calls import Deadlines, close_within, stop_intake_within
from bot.ops.housekeeping import Housekeeping
from bot.ops.kernel_tasks import Loop
from bot.pipeline.bus import InboundBus
from bot.pipeline.clarifications import Clarifications
from bot.pipeline.group_context import ListenWarnings
from bot.pipeline.intake import Intake
from bot.pipeline.lanes import Lanes
from bot.pipeline.router import Router
from bot.pipeline.sessions import Sessions
from bot.pipeline.turn_hooks import TurnHooks, TurnParts, TurnTools
from bot.pipeline.turns import TurnDeps, TurnRunner
from bot.ports import AgentBackend, Channel, Store
from bot.ports.push import Push
from bot.push.assembly import daemon_pusher
from bot.push.pusher import Pusher
from bot.schedules.book import ScheduleBook, turn_schedulers
from bot.schedules.commands import register_schedule_commands
from bot.takeover.commands import register_mute_commands
from bot.takeover.handoff import HandoffDeps, Handoffs
from bot.takeover.mutes import MuteBook
from bot.takeover.takeover import Takeover
from bot.usage.assembly import turn_meter
from bot.usage.commands import register_usage_commands

logger = logging.getLogger(__name__)

ReloadFn = Callable[[str], Awaitable[str]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Kernel:
    settings: Callable[[], Settings]
    store: Store
    hub: ChannelHub
    delivery: Delivery
    """The outbox, send pacing, the metrics and the fence (``bot.delivery.assembly``)."""
    conversations: Conversations
    """Intake, the bus, the router, sessions, lanes, open questions and the commands."""
    fleet: FleetParts
    """Replicas and crash recovery: ownership, left placeholders, notices (design §11)."""
    pusher: Pusher
    """Proactive messages: the push API, schedules and the agent's handoff (design §19)."""
    housekeeping: Housekeeping

    def add_channel(self, channel: Channel) -> None:
        """A channel the daemon starts with (it starts in state ``starting``)."""
        self.hub.add(channel)
        _pace(self.delivery.limiter, channel)

    def install_channel(self, channel: Channel) -> None:
        """Put a channel instance in place (first start, restart, enabled by a reload)."""
        self.hub.replace(channel)
        _pace(self.delivery.limiter, channel)

    async def prepare(self) -> None:
        """Restore persisted state and requeue unfinished work before intake opens (and before
        the outbox worker runs: left placeholders are withdrawn or reserved first)."""
        await self.hub.load_pauses()
        await self.fleet.prepare()

    def recovery_loops(self) -> list[tuple[str, Loop]]:
        """The deferred part of crash recovery, one loop per channel with left placeholders
        (``recovery:<channel>``); each returns when its channel's are finished."""
        return [
            (f"recovery:{name}", functools.partial(self.fleet.placeholders.finish, name))
            for name in self.fleet.placeholders.channels()
        ]

    def deadlines(self, channel: str) -> Deadlines:
        """How long this channel's start and close may take (its settings, read each time)."""
        return Deadlines.of(self.settings(), channel)

    async def stop_intake(self) -> None:
        """All channels at once, each within its close deadline."""
        channels = list(self.hub)
        await asyncio.gather(*(stop_intake_within(c, self.deadlines(c.name)) for c in channels))

    async def close_channels(self) -> None:
        """All channels at once, each within its close deadline (one hung SDK costs only its
        own deadline, not the sum)."""
        channels = list(self.hub)
        await asyncio.gather(*(close_within(c, self.deadlines(c.name)) for c in channels))

    async def wait_channels_finished(self) -> None:
        channels = list(self.hub)
        if not channels:
            await asyncio.Event().wait()
        await asyncio.gather(*(channel.wait_finished() for channel in channels))


def build_kernel(  # noqa: PLR0913 - what the kernel is built around
    settings: Callable[[], Settings],
    store: Store,
    agent: AgentBackend,
    hub: ChannelHub,
    reload: ReloadFn,
    *,
    replica_id: str,
    spawn: Spawn,
    usage_clock: Callable[[], datetime] = utc_now,
) -> Kernel:
    """The kernel; channels join with ``add_channel``. ``reload`` serves ``/reload``;
    ``replica_id`` is this daemon among the store's replicas; ``spawn`` starts a kernel task
    unless one of that name runs (the daemon's ``KernelTasks.ensure``); ``usage_clock`` is
    now for budgets, the message rate and the usage meter."""
    ground = Ground(settings=settings, store=store, agent=agent, hub=hub, usage_clock=usage_clock)
    delivery = assemble_delivery(settings, store, hub, replica_id=replica_id)
    hub.listeners.append(functools.partial(_count_reconnects, delivery.counters))
    hub.listeners.append(ListenWarnings(settings, hub))
    inbound, fleet = _inbound(ground, delivery, replica_id, spawn)
    pusher = daemon_pusher(
        settings=settings,
        store=store,
        hub=hub,
        outbox=delivery.outbox,
        intake=inbound.intake,
        bus=inbound.bus,
        sessions=inbound.sessions,
    )
    conversations = assemble_conversations(
        ground, delivery, inbound, push=pusher.push, reload=reload
    )
    clarifications = conversations.clarifications
    return Kernel(
        settings=settings,
        store=store,
        hub=hub,
        delivery=delivery,
        conversations=conversations,
        fleet=fleet,
        pusher=pusher,
        housekeeping=Housekeeping(settings, store, hub, delivery.outbox, clarifications),
    )


def _inbound(
    ground: Ground, delivery: Delivery, replica_id: str, spawn: Spawn
) -> tuple[Inbound, FleetParts]:
    """The bus, the sessions and intake, with the fleet part that admits messages to the bus
    on a shared store."""
    settings, store, hub = ground.settings, ground.store, ground.hub
    bus = InboundBus(settings().daemon.inbound_queue_size)
    sessions = Sessions(settings, store, ground.agent, functools.partial(_threads, hub))
    fleet = assemble_fleet(
        settings,
        store,
        hub,
        delivery,
        bus=bus,
        sessions=sessions,
        replica_id=replica_id,
        warm=ground.agent.warm,
        spawn=spawn,
    )
    admit = fleet.ownership.admit if store.leases.shared else None
    intake = Intake(store, bus, delivery.counters, admit)
    return Inbound(bus=bus, intake=intake, sessions=sessions), fleet


@dataclass(frozen=True, slots=True, kw_only=True)
class Ground:
    """What the kernel is built around: the settings, the store, the agent and the channels."""

    settings: Callable[[], Settings]
    store: Store
    agent: AgentBackend
    hub: ChannelHub
    usage_clock: Callable[[], datetime] = utc_now


@dataclass(frozen=True, slots=True, kw_only=True)
class Inbound:
    """Where messages come in: the bus, intake journaling onto it, and the sessions that name
    their conversations (made before the conversations: the fleet and the push API use them)."""

    bus: InboundBus
    intake: Intake
    sessions: Sessions


@dataclass(frozen=True, slots=True, kw_only=True)
class Conversations:
    bus: InboundBus
    intake: Intake
    router: Router
    sessions: Sessions
    lanes: Lanes
    clarifications: Clarifications
    commands: CommandRegistry
    approvals: Approvals


def assemble_conversations(
    ground: Ground, delivery: Delivery, inbound: Inbound, *, push: Push, reload: ReloadFn
) -> Conversations:
    """``push``: the push port, for the handoff's announcement; ``reload`` serves ``/reload``."""
    settings, store, sessions = ground.settings, ground.store, inbound.sessions
    clarifications = Clarifications(store, lambda: settings().conversations.clarification_ttl_s)
    book = MuteBook(store)
    tools = TurnTools(
        scheduler_for=turn_schedulers(ScheduleBook(settings, store)),
        handoff_for=Handoffs(HandoffDeps(settings=settings, book=book, push=push, store=store)),
    )
    approvals = assemble_approvals(settings, store, ground.hub, delivery)
    hooks = TurnHooks(
        ask_approval=approvals.ask,
        moved_on=approvals.book.moved_on,
        resumed_ended=approvals.book.finished,
        used=turn_meter(settings, store, delivery.counters.registry, clock=ground.usage_clock),
    )
    parts = TurnParts(sessions=sessions, clarifications=clarifications, tools=tools, hooks=hooks)
    lanes = _lanes(ground, delivery, parts)
    takeover = Takeover(settings, book, lanes, store)
    delivery.fence.on_lost += [lanes.drop_chats, clarifications.forget_chats]
    delivery.fence.on_taken += [clarifications.forget_chats, book.chats_taken]
    commands = default_registry(
        register_schedule_commands,
        functools.partial(register_mute_commands, takeover=takeover),
        functools.partial(approvals.register, lanes=lanes),
        register_usage_commands,
    )
    route = RouterDeps(
        settings=settings,
        store=store,
        bus=inbound.bus,
        hub=ground.hub,
        outbox=delivery.outbox,
        counters=delivery.counters,
        conversations=ConversationParts(
            sessions=sessions, lanes=lanes, clarifications=clarifications
        ),
        commands=ChatCommands(
            registry=commands, agent_description=ground.agent.description, reload=reload
        ),
    )
    return Conversations(
        bus=inbound.bus,
        intake=inbound.intake,
        router=Router(
            inbound.bus,
            store,
            delivery.counters,
            route_steps(route, takeover, approvals, usage_clock=ground.usage_clock),
        ),
        sessions=sessions,
        lanes=lanes,
        clarifications=clarifications,
        commands=commands,
        approvals=approvals,
    )


def _lanes(ground: Ground, delivery: Delivery, parts: TurnParts) -> Lanes:
    """The conversations' lanes, each running its turns with the turn runner."""
    runner = TurnRunner(
        TurnDeps(
            settings=ground.settings,
            store=ground.store,
            agent=ground.agent,
            hub=ground.hub,
            delivery=delivery,
            parts=parts,
        )
    )
    return Lanes(runner, ground.settings().agent.max_concurrent_runs)


def _pace(limiter: RateLimiter, channel: Channel) -> None:
    caps = channel.capabilities
    limiter.configure(
        channel.name,
        per_chat_interval_s=caps.per_chat_interval_s,
        per_dm_interval_s=caps.per_dm_interval_s,
        global_rate_per_s=caps.global_rate_per_s,
        group_messages_per_minute=caps.group_messages_per_minute,
    )


def _count_reconnects(
    counters: Counters, channel: str, previous: ChannelState | None, state: ChannelState
) -> None:
    if state is ChannelState.RECONNECTING and previous is ChannelState.RUNNING:
        counters.reconnects.labels(channel=channel).inc()


def _threads(hub: ChannelHub, name: str) -> bool:
    channel = hub.get(name)
    return channel is not None and channel.capabilities.threads
