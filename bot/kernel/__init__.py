"""Wiring of the kernel objects around a store, an agent and a set of channels."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bot.commands import CommandRegistry, default_registry
from bot.commands.routing import ChatCommands
from bot.config.settings import Settings
from bot.delivery.attempt import RetryPolicy
from bot.delivery.outbox import Outbox
from bot.delivery.ratelimit import RateLimiter
from bot.fleet.fence import ChatFence
from bot.fleet.ownership import ChatOwnership
from bot.fleet.rebalance import Rebalancer
from bot.hub import ChannelHub, ChannelState
from bot.kernel.route import ConversationParts, RouterDeps, route_steps
from bot.metrics import Counters
from bot.ops.channel_calls import Deadlines, close_within, stop_intake_within
from bot.ops.housekeeping import Housekeeping
from bot.ops.kernel_tasks import Loop
from bot.pipeline.bus import InboundBus
from bot.pipeline.clarifications import Clarifications
from bot.pipeline.group_context import ListenWarnings
from bot.pipeline.intake import Intake
from bot.pipeline.lanes import Lanes
from bot.pipeline.recovery import LeftPlaceholders, Notify, notice_sender, recover
from bot.pipeline.router import Router
from bot.pipeline.sessions import Sessions
from bot.pipeline.turns import TurnDeps, TurnRunner
from bot.ports import AgentBackend, Channel, Store
from bot.push.assembly import daemon_pusher
from bot.push.pusher import Pusher
from bot.schedules.book import ScheduleBook, turn_schedulers
from bot.schedules.commands import register_schedule_commands
from bot.takeover.commands import register_mute_commands
from bot.takeover.handoff import HandoffDeps, LateHandoffs
from bot.takeover.mutes import MuteBook
from bot.takeover.takeover import Takeover

logger = logging.getLogger(__name__)

ReloadFn = Callable[[str], Awaitable[str]]


@dataclass(kw_only=True)
class Kernel:
    settings: Callable[[], Settings]
    store: Store
    agent: AgentBackend
    hub: ChannelHub
    bus: InboundBus
    intake: Intake
    pusher: Pusher
    """Proactive messages: the push API, schedules and the agent's handoff (design §19)."""
    outbox: Outbox
    lanes: Lanes
    router: Router
    sessions: Sessions
    commands: CommandRegistry
    counters: Counters
    housekeeping: Housekeeping
    clarifications: Clarifications
    limiter: RateLimiter
    placeholders: LeftPlaceholders
    """Placeholders a crash left pending, finished once their channels run (design §11)."""
    ownership: ChatOwnership
    """The chats this replica serves, on a store several share (design §11 "replicas")."""
    notify: Notify
    """Tells a chat that its turn is resumed or lost after a crash or a takeover."""
    fence: ChatFence
    """Keeps this replica from acting for chats another took over (design §11 "replicas")."""

    def add_channel(self, channel: Channel) -> None:
        """A channel the daemon starts with (it starts in state ``starting``)."""
        self.hub.add(channel)
        _pace(self.limiter, channel)

    def install_channel(self, channel: Channel) -> None:
        """Put a channel instance in place (first start, restart, enabled by a reload)."""
        self.hub.replace(channel)
        _pace(self.limiter, channel)

    async def prepare(self) -> None:
        """Restore persisted state and requeue unfinished work before intake opens (and before
        the outbox worker runs: left placeholders are withdrawn or reserved first)."""
        await self.hub.load_pauses()
        if self.ownership.shared:
            # Only what no live replica has in hand: the rest is theirs.
            await self.ownership.sweep(fresh_start=True)
            return
        await self.placeholders.collect()
        await recover(self.store, self.bus, self.notify, self.outbox.submit, warm=self.agent.warm)

    def recovery_loops(self) -> list[tuple[str, Loop]]:
        """The deferred part of crash recovery, one loop per channel with left placeholders
        (``recovery:<channel>``); each returns when its channel's are finished."""
        return [
            (f"recovery:{name}", functools.partial(self.placeholders.finish, name))
            for name in self.placeholders.channels()
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
) -> Kernel:
    """The kernel; channels join with ``add_channel``. ``reload`` serves ``/reload``;
    ``replica_id`` is this daemon among the store's replicas."""
    current = settings()
    shared = store.leases.shared
    counters = Counters()
    limiter = RateLimiter()
    hub.listeners.append(functools.partial(_count_reconnects, counters))
    hub.listeners.append(ListenWarnings(settings, hub))
    bus = InboundBus(current.daemon.inbound_queue_size)
    fence = ChatFence(store.leases, replica_id, counters.replicas.fenced)
    outbox = Outbox(
        store,
        hub,
        limiter,
        counters,
        RetryPolicy(max_attempts=current.daemon.outbox_max_attempts),
        holder=replica_id if shared else None,
        fence=fence,
    )
    sessions = Sessions(settings, store, agent, lambda name: _threads(hub, name))
    clarifications = Clarifications(store, lambda: settings().conversations.clarification_ttl_s)
    handoffs = LateHandoffs()
    runner = TurnRunner(
        TurnDeps(
            settings=settings,
            store=store,
            agent=agent,
            hub=hub,
            sessions=sessions,
            outbox=outbox,
            limiter=limiter,
            clarifications=clarifications,
            counters=counters,
            fence=fence,
            scheduler_for=turn_schedulers(ScheduleBook(settings, store)),
            handoff_for=handoffs,
        )
    )
    lanes = Lanes(runner, current.agent.max_concurrent_runs)
    mute_book = MuteBook(store)
    takeover = Takeover(settings, mute_book, lanes, store)
    fence.on_lost += [lanes.drop_chats, clarifications.forget_chats]
    fence.on_taken += [clarifications.forget_chats, mute_book.chats_taken]
    commands = default_registry(
        register_schedule_commands,
        functools.partial(register_mute_commands, takeover=takeover),
    )
    placeholders = LeftPlaceholders(store, outbox, hub)
    notify = notice_sender(outbox.submit, sessions, hub.capabilities_of)
    ownership = ChatOwnership(
        store,
        bus,
        outbox,
        placeholders,
        replica_id=replica_id,
        expiry_s=lambda: settings().daemon.replica_expiry_s,
        notify=notify,
        submit=outbox.submit,
        warm=agent.warm,
        rebalancer=Rebalancer(
            store.leases,
            replica_id=replica_id,
            expiry_s=lambda: settings().daemon.replica_expiry_s,
            moves_per_sweep=lambda: settings().daemon.rebalance_moves,
            moved=counters.replicas.chats_rebalanced,
            fence=fence,
        ),
        fence=fence,
    )
    route = RouterDeps(
        settings=settings,
        store=store,
        bus=bus,
        hub=hub,
        outbox=outbox,
        counters=counters,
        conversations=ConversationParts(
            sessions=sessions, lanes=lanes, clarifications=clarifications
        ),
        commands=ChatCommands(
            registry=commands, agent_description=agent.description, reload=reload
        ),
    )
    router = Router(bus, store, counters, route_steps(route, takeover))
    intake = Intake(store, bus, counters, ownership.admit if shared else None)
    pusher = daemon_pusher(
        settings=settings,
        store=store,
        hub=hub,
        outbox=outbox,
        intake=intake,
        bus=bus,
        sessions=sessions,
    )
    handoffs.deps = HandoffDeps(settings=settings, takeover=takeover, push=pusher.push)
    return Kernel(
        settings=settings,
        store=store,
        agent=agent,
        hub=hub,
        bus=bus,
        intake=intake,
        pusher=pusher,
        outbox=outbox,
        lanes=lanes,
        router=router,
        sessions=sessions,
        commands=commands,
        counters=counters,
        housekeeping=Housekeeping(settings, store, hub, outbox, clarifications),
        clarifications=clarifications,
        limiter=limiter,
        placeholders=placeholders,
        ownership=ownership,
        notify=notify,
        fence=fence,
    )


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
