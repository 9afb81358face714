"""Telling systemd how the daemon is doing: the sd_notify protocol (design §13).

The protocol is one datagram of ``KEY=VALUE`` lines sent to ``$NOTIFY_SOCKET``, so it is
implemented here by hand instead of adding a dependency. Without ``$NOTIFY_SOCKET`` (not run
by a ``Type=notify`` unit) every call is a no-op. Sends never block and never raise: losing a
status line must not hurt the daemon.

Watchdog pings come from a task on the event loop, not from a thread, so a loop that is stuck
stops pinging and systemd restarts the daemon (``WatchdogSec=``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass

from bot.hub import ChannelHub, ChannelState

logger = logging.getLogger(__name__)

SETTLED = frozenset({ChannelState.RUNNING, ChannelState.PARKED})
"""Channel states that count as started for ``READY=1``: a parked channel waits for an operator."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AnnounceTiming:
    ready_deadline_s: float = 60.0
    """READY=1 is sent at the latest this long after the channels were launched, even if one
    is still reconnecting (a network outage at boot), so the unit's start timeout (90 s) does
    not kill a daemon whose other channels work; STATUS= names the stragglers."""


class SystemdNotifier:
    """Sends sd_notify messages to one socket address; inert when ``address`` is ``None``."""

    def __init__(self, address: str | None = None, *, watchdog_usec: int | None = None) -> None:
        self._address = _socket_address(address) if address else None
        self._watchdog_usec = watchdog_usec

    @classmethod
    def from_environment(
        cls, environ: Mapping[str, str], *, pid: int | None = None
    ) -> SystemdNotifier:
        """Read ``$NOTIFY_SOCKET``, ``$WATCHDOG_USEC`` and ``$WATCHDOG_PID`` (systemd sets them).

        The watchdog is ours only if ``$WATCHDOG_PID`` is unset or names this process; a
        child that inherited the variables must not ping for its parent.
        """
        address = environ.get("NOTIFY_SOCKET") or None
        usec = _positive_int(environ.get("WATCHDOG_USEC"))
        watchdog_pid = environ.get("WATCHDOG_PID")
        if watchdog_pid and _positive_int(watchdog_pid) != (
            pid if pid is not None else os.getpid()
        ):
            usec = None
        return cls(address, watchdog_usec=usec)

    @property
    def enabled(self) -> bool:
        return self._address is not None

    def notify(self, *assignments: str) -> bool:
        """Send ``KEY=VALUE`` lines as one datagram; ``True`` if it was handed to the kernel."""
        if self._address is None or not assignments:
            return False
        payload = "\n".join(assignments).encode()
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                sock.sendto(payload, socket.MSG_DONTWAIT, self._address)
        except OSError as exc:
            logger.warning("sd_notify %s failed: %s", assignments[0], exc)
            return False
        return True

    def ready(self, status: str | None = None) -> None:
        self.notify("READY=1", *_status_line(status))

    def status(self, text: str) -> None:
        self.notify(*_status_line(text))

    def reloading(self) -> None:
        """``RELOADING=1`` with the CLOCK_MONOTONIC timestamp systemd uses to match the reload."""
        usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        self.notify("RELOADING=1", f"MONOTONIC_USEC={usec}")

    def stopping(self, status: str | None = None) -> None:
        self.notify("STOPPING=1", *_status_line(status))

    def watchdog_interval(self) -> float | None:
        """Seconds between ``WATCHDOG=1`` pings (half of ``$WATCHDOG_USEC``), or ``None``."""
        if self._address is None or self._watchdog_usec is None:
            return None
        return self._watchdog_usec / 2 / 1_000_000

    async def run_watchdog(self) -> None:
        """Ping now and then every interval until cancelled; returns at once without a watchdog."""
        interval = self.watchdog_interval()
        if interval is None:
            return
        logger.info("systemd watchdog: pinging every %.1fs", interval)
        while True:
            self.notify("WATCHDOG=1")
            await asyncio.sleep(interval)

    @contextlib.asynccontextmanager
    async def watchdog(self) -> AsyncIterator[None]:
        """Run :meth:`run_watchdog` as a task for the duration of the block."""
        task = asyncio.create_task(self.run_watchdog(), name="sdnotify:watchdog")
        try:
            yield
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


def channel_summary(hub: ChannelHub) -> str:
    """``"telegram running, slack parked"``: the STATUS= text for the channels."""
    return ", ".join(f"{name} {hub.state(name)}" for name in hub.names()) or "no channels"


async def announce_channels(
    hub: ChannelHub,
    notifier: SystemdNotifier,
    ready: asyncio.Event,
    settled: Callable[[], Awaitable[object]],
    timing: AnnounceTiming = AnnounceTiming(),
) -> None:
    """Set ``ready`` and send ``READY=1`` once ``settled()`` returns (every channel runs or is
    parked) or after the deadline, then keep STATUS= current (until cancelled)."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timing.ready_deadline_s):
            await settled()
    summary = channel_summary(hub)
    waiting = sorted(name for name in hub.names() if hub.state(name) not in SETTLED)
    if waiting:
        logger.warning("ready with channel(s) still starting: %s", ", ".join(waiting))
    logger.info("ready: %s", summary)
    ready.set()
    notifier.ready(f"ready: {summary}")
    if not notifier.enabled:
        return
    changed = asyncio.Event()

    def on_change(_name: str, _previous: ChannelState | None, _state: ChannelState) -> None:
        changed.set()

    hub.listeners.append(on_change)
    try:
        while True:
            await changed.wait()
            changed.clear()
            current = channel_summary(hub)
            if current != summary:
                summary = current
                notifier.status(f"ready: {summary}")
    finally:
        hub.listeners.remove(on_change)


def _status_line(text: str | None) -> tuple[str, ...]:
    if not text:
        return ()
    return (f"STATUS={' '.join(text.split())}",)


def _socket_address(address: str) -> str | None:
    """``@name`` is an abstract socket; anything but an absolute path is unsupported (vsock)."""
    if address.startswith("@"):
        return "\0" + address[1:]
    if address.startswith("/"):
        return address
    logger.warning("NOTIFY_SOCKET %r is not a unix socket path; not notifying systemd", address)
    return None


def _positive_int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        return None
    return number if number > 0 else None
