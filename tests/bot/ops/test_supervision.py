"""Channel supervision: backoff, parking, re-probing, stale links, budgets (design §12)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from bot.backoff import Backoff
from bot.errors import AuthFailed, ChannelError
from bot.hub import ChannelHub, ChannelState
from bot.messages import InboundMessage
from bot.ops.channel_calls import Deadlines
from bot.ops.supervision import ChannelSupervision, SupervisionPolicy
from bot.ports import Admission
from store.sqlite import SqliteStore
from tests.fakes.channel import DEFAULT_CAPS, FakeChannel

FAST = SupervisionPolicy(
    backoff=Backoff(base_s=0.001, cap_s=0.01),
    parked_retry_s=3600,
    stale_check_s=0.01,
    breaker_pause_s=0.01,
)


class _AcceptAll:
    """A ``Publish`` for supervision tests, which never deliver messages."""

    async def __call__(self, message: InboundMessage) -> Admission:
        return Admission.ACCEPTED

    async def many(self, messages: Sequence[InboundMessage]) -> list[Admission]:
        return [Admission.ACCEPTED] * len(messages)


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[ChannelHub]:
    async with SqliteStore.from_state_dir(tmp_path) as store:
        yield ChannelHub(store.settings)


class StateLog:
    """Every state the hub reports, with a way to wait for one."""

    def __init__(self, hub: ChannelHub) -> None:
        self.states: list[ChannelState] = []
        self._waiters: list[tuple[ChannelState, int, asyncio.Event]] = []
        hub.listeners.append(self._record)

    def _record(self, name: str, previous: ChannelState | None, state: ChannelState) -> None:
        self.states.append(state)
        for wanted, count, event in self._waiters:
            if self.states.count(wanted) >= count:
                event.set()

    async def wait_for(self, state: ChannelState, count: int = 1) -> None:
        event = asyncio.Event()
        self._waiters.append((state, count, event))
        if self.states.count(state) >= count:
            event.set()
        async with asyncio.timeout(5):
            await event.wait()


QUICK = Deadlines(start_s=0.05, close_s=0.05)


def _deadlines(_channel: str) -> Deadlines:
    return QUICK


async def _parked(supervision: ChannelSupervision) -> None:
    async with asyncio.timeout(5):
        await supervision.supervisors["fake"].parked.wait()


async def _run(
    hub: ChannelHub, channel: FakeChannel, policy: SupervisionPolicy
) -> ChannelSupervision:
    hub.add(channel)
    supervision = ChannelSupervision(
        hub, _AcceptAll(), policy, install=hub.replace, deadlines=_deadlines
    )
    supervision.supervise(channel.name, lambda: channel)
    return supervision


async def test_start_failures_back_off_until_the_channel_runs(hub: ChannelHub) -> None:
    channel = FakeChannel()
    channel.start_failures.extend([ChannelError("refused"), ChannelError("refused")])
    log = StateLog(hub)
    supervision = await _run(hub, channel, FAST)
    await supervision.wait_settled()
    assert hub.state("fake") is ChannelState.RUNNING
    assert log.states == [ChannelState.RECONNECTING, ChannelState.RUNNING]
    assert not channel.start_failures
    await supervision.stop()


async def test_auth_failure_parks_and_reload_reprobes_at_once(hub: ChannelHub) -> None:
    channel = FakeChannel()
    channel.start_failures.append(AuthFailed("401 Unauthorized"))
    log = StateLog(hub)
    supervision = await _run(hub, channel, FAST)
    await supervision.wait_settled()
    assert hub.state("fake") is ChannelState.PARKED
    assert "auth_failed" in hub.reason("fake")
    await _parked(supervision)
    supervision.wake_all()
    await log.wait_for(ChannelState.RUNNING)
    await supervision.stop()


async def test_credentials_lost_while_running_park_the_channel(hub: ChannelHub) -> None:
    channel = FakeChannel()
    log = StateLog(hub)
    supervision = await _run(hub, channel, FAST)
    await supervision.wait_settled()
    hub.reporter("fake").auth_failed("token revoked")
    await log.wait_for(ChannelState.PARKED)
    await _parked(supervision)
    assert channel.closed
    supervision.wake_all()
    await log.wait_for(ChannelState.RUNNING, count=2)
    await supervision.stop()


async def test_a_silent_channel_is_reconnected(hub: ChannelHub) -> None:
    channel = FakeChannel(caps=replace(DEFAULT_CAPS, stale_after_s=0.02))
    log = StateLog(hub)
    policy = replace(FAST, restart_budget=100)
    supervision = await _run(hub, channel, policy)
    await log.wait_for(ChannelState.RUNNING, count=2)
    assert ChannelState.RECONNECTING in log.states
    assert channel.closed
    await supervision.stop()


async def test_restart_budget_parks_a_flapping_channel(hub: ChannelHub) -> None:
    channel = FakeChannel(caps=replace(DEFAULT_CAPS, stale_after_s=0.001))
    log = StateLog(hub)
    supervision = await _run(hub, channel, replace(FAST, restart_budget=2))
    await log.wait_for(ChannelState.PARKED)
    assert "restart budget exhausted" in hub.reason("fake")
    await supervision.stop()


async def test_a_start_that_hangs_fails_at_its_deadline_and_is_retried(hub: ChannelHub) -> None:
    channel = FakeChannel(start_hangs=1)
    log = StateLog(hub)
    supervision = await _run(hub, channel, FAST)
    await log.wait_for(ChannelState.RUNNING)
    assert log.states[0] is ChannelState.RECONNECTING
    assert channel.started.is_set()
    await supervision.stop()


async def test_a_close_that_hangs_is_abandoned_at_its_deadline(hub: ChannelHub) -> None:
    channel = FakeChannel(close_hangs=True)
    log = StateLog(hub)
    supervision = await _run(hub, channel, FAST)
    await log.wait_for(ChannelState.RUNNING)
    async with asyncio.timeout(5):
        await supervision.unsupervise("fake")
    assert hub.state("fake") is ChannelState.STOPPED
    assert not channel.closed


async def test_a_connection_that_died_inside_the_sdk_restarts_the_channel(
    hub: ChannelHub,
) -> None:
    channel = FakeChannel()
    log = StateLog(hub)
    supervision = await _run(hub, channel, replace(FAST, stale_check_s=60))
    await log.wait_for(ChannelState.RUNNING)
    hub.reporter("fake").failed("gave up reconnecting")
    await log.wait_for(ChannelState.RUNNING, count=2)
    assert channel.closed
    assert log.states[-2:] == [ChannelState.RECONNECTING, ChannelState.RUNNING]
    await supervision.stop()
