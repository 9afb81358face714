"""Channel supervision (design §12): one supervised task per channel.

Start failures are classified: refused credentials park the channel (re-probed rarely, and at
once on ``/reload`` or SIGHUP); anything else reconnects with capped, jittered backoff. A
running channel is restarted when its adapter reports it lost credentials, or when it has
been silent for longer than its ``stale_after_s`` (adapters feed activity through
``ChannelHealth.activity``). A per-channel restart budget and a breaker across all channels stop
reconnect storms; one channel failing never stops the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from bot.backoff import Backoff
from bot.errors import AuthFailed
from bot.hub import ChannelHub, ChannelState
from bot.ops.channel_calls import Deadlines, close_within, start_within
from bot.ports import Channel, Publish
from bot.text.escape import bound, escape_controls

logger = logging.getLogger(__name__)

ChannelFactory = Callable[[], Channel]


@dataclass(frozen=True, slots=True, kw_only=True)
class SupervisionPolicy:
    backoff: Backoff = field(default_factory=lambda: Backoff(base_s=1.0, cap_s=60.0))
    parked_retry_s: float = 600.0
    restart_budget: int = 5
    budget_window_s: float = 600.0
    breaker_restarts: int = 6
    breaker_window_s: float = 60.0
    breaker_pause_s: float = 30.0
    stale_check_s: float = 10.0


class RestartBreaker:
    """Counts restarts across all channels; too many in a window pauses every restart."""

    def __init__(self, policy: SupervisionPolicy, clock: Callable[[], float] = time.monotonic):
        self._policy = policy
        self._clock = clock
        self._restarts: deque[float] = deque()

    def record(self) -> None:
        self._restarts.append(self._clock())

    def pause_needed(self) -> float:
        now = self._clock()
        while self._restarts and now - self._restarts[0] > self._policy.breaker_window_s:
            self._restarts.popleft()
        return (
            self._policy.breaker_pause_s
            if len(self._restarts) >= self._policy.breaker_restarts
            else 0
        )


class ChannelSupervision:
    """All supervised channels: their tasks, the shared breaker, wake-ups and settling."""

    def __init__(
        self,
        hub: ChannelHub,
        publish: Publish,
        policy: SupervisionPolicy,
        *,
        install: Callable[[Channel], None],
        deadlines: Callable[[str], Deadlines],
    ) -> None:
        """``install`` puts a rebuilt channel instance in place (the kernel also paces it);
        ``deadlines`` says how long a channel's start and close may take."""
        self.hub = hub
        self.publish = publish
        self.policy = policy
        self.breaker = RestartBreaker(policy)
        self.supervisors: dict[str, ChannelSupervisor] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self.install = install
        self.deadlines = deadlines

    def supervise(self, name: str, factory: ChannelFactory) -> None:
        supervisor = self.supervisors[name] = ChannelSupervisor(name, factory, self)
        self._tasks[name] = asyncio.create_task(supervisor.run(), name=f"channel:{name}:supervisor")

    async def unsupervise(self, name: str) -> None:
        """Stop supervising a channel (disabled by a reload) and close it."""
        task = self._tasks.pop(name, None)
        self.supervisors.pop(name, None)
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        channel = self.hub.get(name)
        if channel is not None:
            await close_within(channel, self.deadlines(name))
        self.hub.remove(name)

    def wake_all(self) -> None:
        for supervisor in self.supervisors.values():
            supervisor.wake()

    async def wait_settled(self) -> None:
        await asyncio.gather(*(s.settled.wait() for s in self.supervisors.values()))

    async def stop(self) -> None:
        """Stop supervising (channels are closed by the shutdown sequence)."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()


class Outage:
    """The log of one channel failing to start: the traceback once, at the first failure,
    then one line per retry, and one line when it connects again (not ~100 lines a retry)."""

    def __init__(self, name: str, clock: Callable[[], float] = time.monotonic) -> None:
        self._name = name
        self._clock = clock
        self._since: float | None = None
        self._tries = 0

    def failed(self, exc: Exception, delay: float) -> None:
        self._tries += 1
        error = short_error(exc)
        if self._since is None:
            self._since = self._clock()
            logger.error(
                "channel %s failed to start: %s; retrying in %.1fs",
                self._name,
                error,
                delay,
                exc_info=exc,
            )
            return
        logger.warning(
            "channel %s failed to start again (try %d): %s; retrying in %.1fs",
            self._name,
            self._tries,
            error,
            delay,
        )

    def ended(self) -> None:
        if self._since is not None:
            took = self._clock() - self._since
            logger.info(
                "channel %s connected again after %d tries / %.1fs", self._name, self._tries, took
            )
        self._since, self._tries = None, 0


def short_error(exc: BaseException, limit: int = 300) -> str:
    """``Type: message`` on one bounded line, control characters escaped."""
    return bound(escape_controls(f"{type(exc).__name__}: {exc}"), limit)


class ChannelSupervisor:
    def __init__(self, name: str, factory: ChannelFactory, supervision: ChannelSupervision) -> None:
        self.name = name
        self._factory = factory
        self._supervision = supervision
        self._hub = supervision.hub
        self._publish = supervision.publish
        self._breaker = supervision.breaker
        self._policy = supervision.policy
        self._wake = asyncio.Event()
        self._restart = asyncio.Event()
        self._restarts: deque[float] = deque()
        self._outage = Outage(name)
        self.settled = asyncio.Event()
        """Set once the channel first runs or is parked (READY waits for every channel)."""
        self.parked = asyncio.Event()
        """Set while the channel waits parked (refused credentials or an exhausted budget)."""
        self._hub.listeners.append(self._on_state)
        self._hub.restart_listeners.append(self._on_failed)

    def _on_state(self, name: str, _previous: ChannelState | None, state: ChannelState) -> None:
        """An adapter reporting lost credentials wakes the watcher, which parks the channel."""
        if name == self.name and state is ChannelState.PARKED and not self.parked.is_set():
            self._wake.set()

    def _on_failed(self, name: str, reason: str) -> None:
        if name == self.name:
            logger.warning("channel %s reported a dead connection (%s); restarting", name, reason)
            self.restart()

    def wake(self) -> None:
        """Re-probe a parked or backing-off channel now (``/reload``, SIGHUP)."""
        self._wake.set()

    def restart(self, factory: ChannelFactory | None = None) -> None:
        """Restart the channel, optionally from new settings (a changed config block)."""
        if factory is not None:
            self._factory = factory
        self._restart.set()
        self._wake.set()

    async def run(self) -> None:
        attempt = 0
        while True:
            channel = self._current()
            started = await self._start(channel, attempt)
            if not started:
                attempt += 1
                continue
            attempt = 0
            reason = await self._watch(channel)
            await self._close(channel)
            self._hub.set_state(self.name, ChannelState.RECONNECTING, reason)
            await self._spend_budget()

    def _current(self) -> Channel:
        channel = self._hub.get(self.name)
        if channel is None or self._restart.is_set():
            self._restart.clear()
            channel = self._factory()
            self._supervision.install(channel)
        return channel

    async def _start(self, channel: Channel, attempt: int) -> bool:
        try:
            await start_within(channel, self._publish, self._supervision.deadlines(self.name))
        except AuthFailed as exc:
            self._hub.set_state(self.name, ChannelState.PARKED, f"auth_failed: {exc}")
            self.settled.set()
            await self._close(channel)
            await self._park()
            self._restart.set()
            return False
        except Exception as exc:  # noqa: BLE001 - top of the channel loop; Outage logs it
            delay = self._policy.backoff.delay(attempt + 1)
            self._outage.failed(exc, delay)
            self._hub.set_state(self.name, ChannelState.RECONNECTING, f"start failed: {exc}")
            await self._close(channel)
            await self._sleep(delay)
            self._restart.set()
            return False
        self._outage.ended()
        self._hub.set_state(self.name, ChannelState.RUNNING)
        self._hub.reporter(self.name).activity()
        self.settled.set()
        return True

    async def _watch(self, channel: Channel) -> str:
        """Wait while the channel runs; the reason it must be restarted."""
        stale_after = channel.capabilities.stale_after_s
        reporter = self._hub.reporter(self.name)
        while True:
            await self._sleep(self._policy.stale_check_s)
            if self._restart.is_set():
                return "restart requested"
            if self._hub.state(self.name) is ChannelState.PARKED:
                await self._close(channel)
                await self._park()
                self._restart.set()
                return "re-probing parked channel"
            silent = time.monotonic() - reporter.last_activity
            if stale_after is not None and silent > stale_after:
                logger.warning("channel %s silent for %.0fs; reconnecting", self.name, silent)
                self._restart.set()
                return f"stale: nothing received for {silent:.0f}s"

    async def _spend_budget(self) -> None:
        """Count a restart; past the budget or the supervision breaker, wait before the next one."""
        now = time.monotonic()
        self._restarts.append(now)
        self._breaker.record()
        while self._restarts and now - self._restarts[0] > self._policy.budget_window_s:
            self._restarts.popleft()
        if len(self._restarts) > self._policy.restart_budget:
            reason = f"restart budget exhausted ({len(self._restarts)} restarts)"
            self._hub.set_state(self.name, ChannelState.PARKED, reason)
            await self._park()
            self._restarts.clear()
        pause = self._breaker.pause_needed()
        if pause:
            logger.warning("supervision breaker: pausing restarts for %.0fs", pause)
            await self._sleep(pause)

    async def _park(self) -> None:
        self.parked.set()
        try:
            await self._sleep(self._policy.parked_retry_s)
        finally:
            self.parked.clear()

    async def _sleep(self, seconds: float) -> None:
        """Wait, but wake early for ``/reload``, SIGHUP or an adapter's report.

        Wake-ups from before the wait began are dropped: they were about an earlier state.
        """
        self._wake.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._wake.wait()

    async def _close(self, channel: Channel) -> None:
        await close_within(channel, self._supervision.deadlines(self.name))
