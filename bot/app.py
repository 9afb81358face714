"""The composition root: builds every object, runs the loops, and shuts down in order.

Edges come from ``bot/registry.py`` unless a caller injects instances (tests run the real
pipeline with in-process fake channels and agents this way). Shutdown follows STYLE P5:
stop intake → close the bus → drain turns within the grace period → flush the outbox →
close channels → close the agent and the store; each step isolated from the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import signal
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from bot.config import Settings
from bot.errors import InstanceLocked, StoreError
from bot.exit_codes import EXIT_OK, EXIT_TEMPFAIL
from bot.http import HttpServer, RouteTable
from bot.hub import ChannelHub
from bot.instance_lock import InstanceLock
from bot.kernel import Kernel, build_kernel
from bot.ports import AgentBackend, Channel, ChannelContext, Store
from bot.registry import EdgeKind, load
from bot.reload import Reloader
from bot.sdnotify import SystemdNotifier, announce_channels, channels_settled
from bot.supervise import supervise_start

logger = logging.getLogger(__name__)

OUTBOX_FLUSH_S = 10.0


@dataclass(kw_only=True)
class Overrides:
    """Instances to use instead of the registry's (tests, embedding)."""

    channels: Sequence[Channel] | None = None
    agent: AgentBackend | None = None
    store: Store | None = None


@dataclass(kw_only=True)
class DaemonOptions:
    config_path: Path | None = None
    chat: bool = False
    install_signals: bool = False
    overrides: Overrides = field(default_factory=Overrides)


class Daemon:
    def __init__(self, settings: Settings, options: DaemonOptions | None = None) -> None:
        self.settings = settings
        self.options = options or DaemonOptions()
        self.stop_requested = asyncio.Event()
        self.ready = asyncio.Event()
        """Set when every channel runs or is parked (when systemd gets ``READY=1``)."""
        self.notifier = SystemdNotifier.from_environment(os.environ)
        self.kernel: Kernel | None = None
        self.http: HttpServer | None = None

    def request_stop(self) -> None:
        self.stop_requested.set()

    def _current(self) -> Settings:
        return self.settings

    async def run(self) -> int:
        lock = InstanceLock(self.settings.state_dir)
        try:
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
        finally:
            lock.release()

    async def _run_locked(self) -> int:
        async with AsyncExitStack() as stack:
            store = await self._open_store(stack)
            agent = await self._open_agent(stack)
            routes = RouteTable()
            hub = ChannelHub(store.settings)
            channels = self._channels(routes, hub)
            kernel = build_kernel(self._current, store, agent, hub, channels)
            self.kernel = kernel
            self.http = HttpServer(self.settings.http, kernel.hub, store, kernel.counters, routes)
            await self.http.start()
            stack.push_async_callback(self.http.aclose)
            reloader = Reloader(self, kernel)
            kernel.command_env_reload(reloader.reload)
            await kernel.prepare()
            logger.info("agent: %s", agent.description)
            await self._serve(kernel, reloader)
        logger.info("stopped")
        return EXIT_OK

    async def _open_store(self, stack: AsyncExitStack) -> Store:
        store = self.options.overrides.store
        if store is None:
            factory = cast(Callable[[Path], Store], load(EdgeKind.STORE, "sqlite"))
            store = factory(self.settings.state_dir)
        await store.open()
        stack.push_async_callback(store.aclose)
        return store

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

    def _channels(self, routes: RouteTable, hub: ChannelHub) -> list[Channel]:
        if self.options.overrides.channels is not None:
            return list(self.options.overrides.channels)
        names = ["console"] if self.options.chat else list(self.settings.channels.enabled())
        channels = []
        for name in names:
            factory = cast(
                Callable[[Settings, ChannelContext], Channel], load(EdgeKind.CHANNEL, name)
            )
            context = ChannelContext(
                routes=routes, state_dir=self.settings.state_dir, health=hub.reporter(name)
            )
            channels.append(factory(self.settings, context))
        return channels

    async def _serve(self, kernel: Kernel, reloader: Reloader) -> None:
        background = [
            asyncio.create_task(kernel.router.run(), name="router"),
            asyncio.create_task(kernel.outbox.run(), name="outbox"),
            asyncio.create_task(kernel.housekeeping.run(), name="housekeeping"),
        ]
        starts = [
            asyncio.create_task(
                supervise_start(channel, kernel.hub, kernel.intake.publish),
                name=f"channel:{channel.name}:start",
            )
            for channel in kernel.hub
        ]
        settled = functools.partial(channels_settled, kernel.hub, starts)
        announce = asyncio.create_task(
            announce_channels(kernel.hub, self.notifier, self.ready, settled),
            name="sdnotify:status",
        )
        with self._signals(reloader):
            finished = await self._wait_for_stop(kernel)
            await self._shutdown(kernel, [announce, *starts], background, drain_bus=finished)

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
        starts: list[asyncio.Task[None]],
        background: list[asyncio.Task[None]],
        *,
        drain_bus: bool,
    ) -> None:
        grace = self.settings.daemon.shutdown_grace_s
        logger.info("stopping (grace %.0fs)", grace)
        self.notifier.stopping(f"stopping: draining turns for up to {grace:.0f}s")
        for task in starts:
            task.cancel()
        await asyncio.gather(*starts, return_exceptions=True)
        await _step("stop intake", kernel.stop_intake())
        kernel.bus.close(drain=drain_bus)
        router_task = background[0]
        if drain_bus:
            await _step("drain router", asyncio.shield(router_task))
            await _step("drain lanes", kernel.lanes.wait_idle())
        leftovers = await kernel.lanes.shutdown(grace)
        if leftovers:
            logger.info("%d queued turn(s) left for resumption", len(leftovers))
        await _step("flush outbox", asyncio.wait_for(kernel.outbox.wait_idle(), OUTBOX_FLUSH_S))
        for task in background:
            task.cancel()
        await asyncio.gather(*background, return_exceptions=True)
        await kernel.outbox.cancel_active()
        await _step("close channels", kernel.close_channels())

    @contextlib.contextmanager
    def _signals(self, reloader: Reloader) -> Iterator[None]:
        if not self.options.install_signals:
            yield
            return
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, self.request_stop)
        loop.add_signal_handler(signal.SIGINT, self.request_stop)
        loop.add_signal_handler(signal.SIGHUP, reloader.on_sighup)
        try:
            yield
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                loop.remove_signal_handler(sig)


async def _step(name: str, awaitable: Awaitable[object]) -> None:
    """Run one shutdown step; a failure is logged and the next step still runs."""
    try:
        await awaitable
    except TimeoutError:
        logger.warning("shutdown step %r timed out", name)
    except Exception:
        logger.exception("shutdown step %r failed", name)
