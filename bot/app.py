"""The composition root: builds every object, runs the loops, and shuts down in order.

Edges come from ``bot/registry.py`` unless a caller injects instances (tests run the real
pipeline with in-process fake channels and agents this way). Shutdown follows design §18 (P5):
stop intake → close the bus → drain turns within the grace period → flush the outbox →
close channels → close the agent and the store; each step isolated from the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

from bot.config.settings import Settings
from bot.config.store import StoreBackend
from bot.delivery.budget import SendBudget
from bot.errors import ConfigError, InstanceLocked, StoreError
from bot.exit_codes import EXIT_CONFIG, EXIT_OK, EXIT_TEMPFAIL
from bot.fleet.replica import ReplicaHeartbeat, identify, wake_others
from bot.fleet.shared_storage import warn_unless_shared
from bot.hub import ChannelHub
from bot.kernel import Kernel, build_kernel
from bot.kernel.options import DaemonOptions, MountFactory, Overrides
from bot.kernel.serving import serve_http
from bot.lifecycle import shutdown_step
from bot.messages import utc_now
from bot.ops.instance_lock import InstanceLock
from bot.ops.kernel_tasks import KernelTasks, Loop
from bot.ops.memory import freeze_when_ready, thaw
from bot.ops.private_files import make_state_dir
from bot.ops.readiness import Readiness
from bot.ops.reload import Reloader
from bot.ops.routes import ListenError, RouteTable
from bot.ops.sdnotify import SystemdNotifier, announce_channels
from bot.ops.signals import stop_and_reload_signals
from bot.ops.supervision import ChannelFactory, ChannelSupervision
from bot.ports import AgentBackend, Channel, ChannelContext, Store
from bot.registry import EdgeKind, load, store_for
from bot.schedules.loops import schedule_loop

if TYPE_CHECKING:
    from bot.ops.http import HttpServer

__all__ = ["Daemon", "DaemonOptions", "MountFactory", "Overrides"]

logger = logging.getLogger(__name__)

OUTBOX_FLUSH_S = 10.0


@dataclass(kw_only=True)
class DaemonChannels:
    """How the daemon builds its channels (supervision rebuilds one to restart it), and the
    supervision that supervises them once the loops run."""

    routes: RouteTable
    """The HTTP routes webhook channels register on."""
    factories: dict[str, ChannelFactory]
    supervision: ChannelSupervision | None = None


class Daemon:
    def __init__(self, settings: Settings, options: DaemonOptions | None = None) -> None:
        self.settings = settings
        self.options = options or DaemonOptions()
        self.stop_requested = asyncio.Event()
        self.ready = asyncio.Event()
        """Set when every channel runs or is parked (when systemd gets ``READY=1``)."""
        self.notifier = SystemdNotifier.from_environment(os.environ)
        self.kernel: Kernel | None = None
        self.reloader: Reloader | None = None
        self.kernel_tasks = KernelTasks(self._kernel_task_died)
        self.exit_status = EXIT_OK
        """What ``run`` returns: 0 for a clean stop, 75 when a kernel loop died."""
        self.http: HttpServer | None = None  # None while ``http.enabled`` is false
        self.heartbeat: ReplicaHeartbeat | None = None
        """This daemon among the store's replicas, once the store is open (design §11)."""
        self._channels: DaemonChannels | None = None

    @property
    def supervision(self) -> ChannelSupervision | None:
        """The channels' supervisors, once the daemon serves."""
        return None if self._channels is None else self._channels.supervision

    @property
    def config_path(self) -> Path | None:
        """The file ``/reload`` and SIGHUP re-read (``None``: settings were handed in)."""
        return self.options.config_path

    def request_stop(self) -> None:
        self.stop_requested.set()

    def _kernel_task_died(self, name: str) -> None:
        """A kernel loop died: stop (draining what can be drained) and exit 75 for a restart."""
        self.exit_status = EXIT_TEMPFAIL
        self.notifier.status(f"stopping: kernel task {name} died")
        self.request_stop()

    def _current(self) -> Settings:
        return self.settings

    async def run(self) -> int:
        # Not only SQLite's: workspaces, DingTalk's session book, the agent's checkpoints.
        # Private (0700) whoever starts the daemon; a looser existing one is tightened.
        await asyncio.to_thread(make_state_dir, self.settings.state_dir)
        # One daemon per SQLite file; PostgreSQL replicas share their store by design.
        lock = InstanceLock(self.settings.state_dir)
        try:
            if self.settings.store.backend is StoreBackend.SQLITE:
                lock.acquire()
        except InstanceLocked as exc:
            logger.error("%s", exc)  # noqa: TRY400 - the message says it all
            return EXIT_TEMPFAIL
        try:
            async with self.notifier.watchdog():
                return await self._run_locked()
        except StoreError as exc:
            logger.error("store unavailable: %s", exc)  # noqa: TRY400
            return EXIT_TEMPFAIL
        except ConfigError as exc:
            logger.error("configuration error: %s", exc)  # noqa: TRY400
            return EXIT_CONFIG
        except ListenError as exc:
            logger.error("%s", exc)  # noqa: TRY400 - one line naming the address
            return EXIT_TEMPFAIL
        finally:
            lock.release()

    async def _run_locked(self) -> int:
        async with AsyncExitStack() as stack:
            store = await self._open_store(stack)
            heartbeat = await self._register_replica(stack, store)
            await warn_unless_shared(self.settings)
            agent = await self._open_agent(stack)
            routes = RouteTable()
            hub = ChannelHub(store.settings)
            reloader = self.reloader = Reloader(self, hub, store.audit)
            kernel = self.kernel = build_kernel(
                self._current,
                store,
                agent,
                hub,
                reloader.reload,
                replica_id=heartbeat.replica.id,
                spawn=self.kernel_tasks.ensure,
                usage_clock=self.options.overrides.usage_clock or utc_now,
            )
            channels = self._channels = DaemonChannels(
                routes=routes, factories=self._channel_factories(routes, kernel)
            )
            if not channels.factories:
                logger.warning("no channel is enabled: nothing will be received (see channels.*)")
            for build in channels.factories.values():
                kernel.add_channel(build())
            self._start_push_loops(kernel, heartbeat.replica.id)
            stack.callback(thaw)
            self.kernel_tasks.start("gc:freeze", functools.partial(freeze_when_ready, self.ready))
            stack.push_async_callback(self.kernel_tasks.stop)
            readiness = Readiness(store, kernel.hub, self.kernel_tasks)  # HTTP's /readyz
            replica, mounts = heartbeat.replica, self.options.mounts
            self.http = await serve_http(
                self._current, kernel, readiness, replica, routes=routes, mounts=mounts
            )
            if self.http is not None:
                stack.push_async_callback(self.http.aclose)
            await heartbeat.beat()  # live, as the others see it, before taking work over
            await self._share_send_budget(heartbeat, store, kernel)
            await kernel.prepare()
            logger.info("agent: %s", agent.description)
            await self._serve(kernel, reloader, channels)
        logger.info("stopped" if self.exit_status == EXIT_OK else "stopped after a failure")
        return self.exit_status

    def _start_push_loops(self, kernel: Kernel, replica_id: str) -> None:
        """The kernel loops ``pushes`` (a daemon alone on its store: a shared store's
        ``ownership`` sweep takes what the CLI recorded) and ``schedules`` (design §19), each
        started once the daemon is ready."""
        if not kernel.store.leases.shared:
            self.kernel_tasks.start("pushes", functools.partial(kernel.pusher.pick_up, self.ready))
        settings, counters = self.settings, kernel.delivery.counters
        loop = schedule_loop(settings, kernel.store, kernel.pusher.push, replica_id, counters)
        if loop is not None:
            self.kernel_tasks.start("schedules", functools.partial(loop, self.ready))

    async def _share_send_budget(
        self, heartbeat: ReplicaHeartbeat, store: Store, kernel: Kernel
    ) -> None:
        """Replicas of one store keep one budget per bot (``bot/delivery/budget.py``): this
        one's part is taken now and again after every heartbeat."""
        budget = SendBudget(
            store.leases,
            kernel.delivery.limiter,
            replica_id=heartbeat.replica.id,
            expiry_s=lambda: self.settings.daemon.replica_expiry_s,
        )
        await budget.refresh()
        heartbeat.after_beat.append(budget.refresh)
        # A stall is noticed within a beat.
        heartbeat.after_beat.append(kernel.delivery.fence.verify)

    async def _open_store(self, stack: AsyncExitStack) -> Store:
        store = self.options.overrides.store
        if store is None:
            store = store_for(self.settings)
        try:
            await store.open()
        except StoreError as exc:
            raise StoreError(f"store.url ({self.settings.store.redacted_url()}): {exc}") from exc
        stack.push_async_callback(store.aclose)
        return store

    async def _register_replica(self, stack: AsyncExitStack, store: Store) -> ReplicaHeartbeat:
        """Register in the store's replicas (deregistered when the stack closes, before the
        store); the kernel task ``replica`` keeps the heartbeat fresh."""
        replica = await identify(self.settings)
        heartbeat = self.heartbeat = ReplicaHeartbeat(
            store.replicas, replica, expiry_s=self.settings.daemon.replica_expiry_s
        )
        await heartbeat.register()
        stack.push_async_callback(wake_others, store)  # runs after deregister (LIFO)
        stack.push_async_callback(heartbeat.deregister)
        return heartbeat

    async def _open_agent(self, stack: AsyncExitStack) -> AgentBackend:
        agent = self.options.overrides.agent
        if agent is None:
            backend = self.settings.agent.backend
            if backend == "embedded" and self.settings.agent.model.offline:
                logger.warning("no model API key configured: using the offline echo model")
            factory = cast(Callable[[Settings], AgentBackend], load(EdgeKind.AGENT, backend))
            agent = factory(self.settings)
        await agent.start()
        stack.push_async_callback(agent.aclose)
        return agent

    def _channel_factories(self, routes: RouteTable, kernel: Kernel) -> dict[str, ChannelFactory]:
        """How to build each channel; supervision rebuilds one to restart it."""
        if self.options.overrides.channels is not None:
            return {c.name: functools.partial(_reuse, c) for c in self.options.overrides.channels}
        names = ["console"] if self.options.chat else list(self.settings.channels.enabled())
        return {name: self._registry_factory(name, routes, kernel) for name in names}

    def _registry_factory(self, name: str, routes: RouteTable, kernel: Kernel) -> ChannelFactory:
        adapter = cast(Callable[[Settings, ChannelContext], Channel], load(EdgeKind.CHANNEL, name))
        menu = kernel.conversations.commands.menu()

        def build() -> Channel:
            context = ChannelContext(
                routes=routes,
                state_dir=self.settings.state_dir,
                health=kernel.hub.reporter(name),
                commands=menu,
                exclusive=kernel.store.leases.exclusive,
            )
            return adapter(self.settings, context)

        return build

    async def apply_channel_changes(self, old: Settings, new: Settings) -> list[str]:
        """Restart, start or stop channels whose config block changed (SIGHUP, ``/reload``).

        Parked and backing-off channels are re-probed at once either way.
        """
        notes: list[str] = []
        channels, kernel = self._channels, self.kernel
        if channels is None or channels.supervision is None or kernel is None:
            return notes
        supervision, routes = channels.supervision, channels.routes
        if self.options.overrides.channels is None and not self.options.chat:
            before, after = old.channels.enabled(), new.channels.enabled()
            for name in sorted(set(before) | set(after)):
                if name in before and name not in after:
                    await supervision.unsupervise(name)
                    notes.append(f"channel {name} stopped")
                elif name in after and (name not in before or before[name] != after[name]):
                    factory = self._registry_factory(name, routes, kernel)
                    channels.factories[name] = factory
                    if name in supervision.supervisors:
                        supervision.supervisors[name].restart(factory)
                        notes.append(f"channel {name} restarting with its new settings")
                    else:
                        kernel.install_channel(factory())
                        supervision.supervise(name, factory)
                        notes.append(f"channel {name} started")
        supervision.wake_all()
        return notes

    async def _serve(self, kernel: Kernel, reloader: Reloader, channels: DaemonChannels) -> None:
        tasks, conversations = self.kernel_tasks, kernel.conversations
        approvals: Loop = functools.partial(conversations.approvals.run, conversations.lanes)
        for name, loop in (
            ("router", kernel.conversations.router.run),
            ("outbox", kernel.delivery.outbox.run),
            ("housekeeping", kernel.housekeeping.run),
            ("approvals", approvals),
            *self._replica_loop(),
            *self._ownership_loop(kernel),
            *kernel.recovery_loops(),
        ):
            tasks.start(name, loop)
        supervision = ChannelSupervision(
            kernel.hub,
            kernel.conversations.intake,
            self.options.supervision,
            install=kernel.install_channel,
            deadlines=kernel.deadlines,
        )
        channels.supervision = supervision
        for name, factory in channels.factories.items():
            supervision.supervise(name, factory)
        announce = asyncio.create_task(
            announce_channels(kernel.hub, self.notifier, self.ready, supervision.wait_settled),
            name="sdnotify:status",
        )
        with self._signals(reloader):
            finished = await self._wait_for_stop(kernel)
            await self._shutdown(kernel, [announce], drain_bus=finished)

    def _replica_loop(self) -> list[tuple[str, Loop]]:
        return [] if self.heartbeat is None else [("replica", self.heartbeat.run)]

    @staticmethod
    def _ownership_loop(kernel: Kernel) -> list[tuple[str, Loop]]:
        """Taking work of replicas that are gone, and messages others journaled for ours."""
        ownership = kernel.fleet.ownership
        return [("ownership", ownership.run)] if ownership.shared else []

    async def _wait_for_stop(self, kernel: Kernel) -> bool:
        """Wait for a stop request or for every channel's input to end; ``True`` for the latter."""
        stop = asyncio.create_task(self.stop_requested.wait(), name="wait:stop")
        ended = asyncio.create_task(kernel.wait_channels_finished(), name="wait:channels")
        done, pending = await asyncio.wait({stop, ended}, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        return ended in done

    async def _shutdown(
        self,
        kernel: Kernel,
        helpers: list[asyncio.Task[None]],
        *,
        drain_bus: bool,
    ) -> None:
        grace = self.settings.daemon.shutdown_grace_s
        logger.info("stopping (grace %.0fs)", grace)
        self.notifier.stopping(f"stopping: draining turns for up to {grace:.0f}s")
        for task in helpers:
            task.cancel()
        await asyncio.gather(*helpers, return_exceptions=True)
        if self.supervision is not None:
            await self.supervision.stop()
        await shutdown_step("stop intake", kernel.stop_intake())
        kernel.conversations.bus.close(drain=drain_bus)
        router_task = self.kernel_tasks.task("router")
        if drain_bus:
            await shutdown_step("drain router", asyncio.shield(router_task))
            await shutdown_step("drain lanes", kernel.conversations.lanes.wait_idle())
        leftovers = await kernel.conversations.lanes.shutdown(grace)
        if leftovers:
            logger.info("%d queued turn(s) left for resumption", len(leftovers))
        outbox = kernel.delivery.outbox
        await shutdown_step("flush outbox", asyncio.wait_for(outbox.wait_idle(), OUTBOX_FLUSH_S))
        await self.kernel_tasks.stop()
        await outbox.cancel_active()
        await shutdown_step("close channels", kernel.close_channels())

    def _signals(self, reloader: Reloader) -> contextlib.AbstractContextManager[None]:
        return stop_and_reload_signals(
            install=self.options.install_signals,
            request_stop=self.request_stop,
            on_sighup=reloader.on_sighup,
        )


def _reuse(channel: Channel) -> Channel:
    """The factory of an injected channel: restarting reuses the instance."""
    return channel
