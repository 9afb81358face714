"""The running channels, their states and their pause switches.

Pause state is persisted in the store's settings so ``/pause`` survives a restart (design §9).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from enum import StrEnum

from bot.ports import Channel, ChannelCapabilities, SettingsStore

logger = logging.getLogger(__name__)

ALL_CHANNELS = "*"


class ChannelState(StrEnum):
    STARTING = "starting"
    RUNNING = "running"
    RECONNECTING = "reconnecting"
    PARKED = "parked"
    STOPPED = "stopped"


def pause_setting(channel: str) -> str:
    """The settings row that holds a channel's pause switch (``*`` for all channels)."""
    return f"paused.{channel}"


StateListener = Callable[[str, "ChannelState | None", "ChannelState"], None]


class HealthReporter:
    """The ``ChannelHealth`` an adapter gets: writes its state into the hub."""

    def __init__(self, hub: ChannelHub, name: str, clock: Callable[[], float] = time.monotonic):
        self._hub = hub
        self._name = name
        self._clock = clock
        self.last_activity = clock()

    def connected(self) -> None:
        self._hub.set_state(self._name, ChannelState.RUNNING)

    def disconnected(self, reason: str) -> None:
        self._hub.set_state(self._name, ChannelState.RECONNECTING, reason)

    def auth_failed(self, reason: str) -> None:
        self._hub.set_state(self._name, ChannelState.PARKED, f"auth_failed: {reason}")

    def activity(self) -> None:
        self.last_activity = self._clock()

    def failed(self, reason: str) -> None:
        self._hub.set_state(self._name, ChannelState.RECONNECTING, reason)
        for listener in self._hub.restart_listeners:
            listener(self._name, reason)


class ChannelHub:
    def __init__(self, settings: SettingsStore) -> None:
        self._settings = settings
        self._channels: dict[str, Channel] = {}
        self._states: dict[str, ChannelState] = {}
        self._reasons: dict[str, str] = {}
        self._paused: set[str] = set()
        self._reporters: dict[str, HealthReporter] = {}
        self.listeners: list[StateListener] = []
        """Called on every state change as ``(channel, previous, new)``."""
        self.restart_listeners: list[Callable[[str, str], None]] = []
        """Called as ``(channel, reason)`` when an adapter reports a connection it cannot
        recover (``ChannelHealth.failed``); the channel's supervisor restarts it."""

    def add(self, channel: Channel) -> None:
        self._channels[channel.name] = channel
        self._states[channel.name] = ChannelState.STARTING

    def replace(self, channel: Channel) -> None:
        """Swap in a new instance of a channel (a restart from fresh settings)."""
        self._channels[channel.name] = channel

    def remove(self, name: str) -> None:
        self._channels.pop(name, None)
        self.set_state(name, ChannelState.STOPPED)

    def reporter(self, name: str) -> HealthReporter:
        reporter = self._reporters.get(name)
        if reporter is None:
            reporter = self._reporters[name] = HealthReporter(self, name)
        return reporter

    def capabilities_of(self, name: str) -> ChannelCapabilities | None:
        channel = self._channels.get(name)
        return channel.capabilities if channel is not None else None

    def get(self, name: str) -> Channel | None:
        return self._channels.get(name)

    def __iter__(self) -> Iterator[Channel]:
        return iter(list(self._channels.values()))

    def names(self) -> list[str]:
        return list(self._channels)

    def state(self, name: str) -> ChannelState:
        return self._states.get(name, ChannelState.STOPPED)

    def reason(self, name: str) -> str:
        return self._reasons.get(name, "")

    def set_state(self, name: str, state: ChannelState, reason: str = "") -> None:
        previous = self._states.get(name)
        self._states[name] = state
        self._reasons[name] = reason
        if previous != state:
            logger.info("channel %s: %s -> %s %s", name, previous, state, reason)
            for listener in self.listeners:
                listener(name, previous, state)

    def usable(self, name: str) -> bool:
        """Whether sends to this channel should be attempted now."""
        return self.state(name) in (ChannelState.RUNNING, ChannelState.STARTING)

    async def load_pauses(self) -> None:
        for name in [*self._channels, ALL_CHANNELS]:
            if await self._settings.get(pause_setting(name)):
                self._paused.add(name)

    def is_paused(self, channel: str) -> bool:
        return channel in self._paused or ALL_CHANNELS in self._paused

    async def set_paused(self, channel: str, *, paused: bool) -> None:
        if paused:
            self._paused.add(channel)
        else:
            self._paused.discard(channel)
        await self._settings.set(pause_setting(channel), "1" if paused else None)
