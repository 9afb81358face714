"""sd_notify as systemd receives it: datagrams on a real unix socket (design §13).

The daemon runs in-process with fake channels and agents (READY, watchdog pings and their
absence while the event loop is blocked, RELOADING/READY around a reload, STOPPING), and as
``python -m bot run`` in a subprocess that gets SIGHUP and SIGTERM.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from bot.app import Daemon, DaemonOptions, Overrides
from bot.config.settings import Settings
from bot.hub import ChannelHub, ChannelState
from bot.ops.sdnotify import AnnounceTiming, SystemdNotifier, announce_channels
from store.sqlite import SqliteStore
from tests.bot.harness import make_settings
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import AUTH_FAILED, FakeChannel, dm

REPO = Path(__file__).resolve().parents[3]
Message = dict[str, str]


@pytest.fixture
def notify_socket(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[socket.socket, str]]:
    """A bound datagram socket and its NOTIFY_SOCKET path (short: sun_path holds 108 bytes)."""
    path = tmp_path_factory.mktemp("sd") / "notify"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(path))
        sock.settimeout(0)
        yield sock, str(path)


def _parse(data: bytes) -> Message:
    return dict(line.split("=", 1) for line in data.decode().splitlines())


def _drain(sock: socket.socket) -> list[Message]:
    """Every datagram already queued, without waiting."""
    messages = []
    while True:
        try:
            messages.append(_parse(sock.recv(4096)))
        except BlockingIOError:
            return messages


async def _receive(sock: socket.socket, within: float = 5.0) -> Message:
    async with asyncio.timeout(within):
        return _parse(await asyncio.get_running_loop().sock_recv(sock, 4096))


async def _receive_until(sock: socket.socket, key: str, within: float = 5.0) -> list[Message]:
    """Messages up to and including the first one that has ``key``."""
    seen: list[Message] = []
    async with asyncio.timeout(within):
        while not seen or key not in seen[-1]:
            seen.append(await _receive(sock))
    return seen


def _not_pings(messages: list[Message]) -> list[Message]:
    return [message for message in messages if message != {"WATCHDOG": "1"}]


@asynccontextmanager
async def _daemon(
    settings: Settings, channels: list[FakeChannel], config_path: Path | None = None
) -> AsyncIterator[Daemon]:
    options = DaemonOptions(
        config_path=config_path, overrides=Overrides(channels=channels, agent=FakeAgent())
    )
    daemon = Daemon(settings, options)
    task = asyncio.create_task(daemon.run(), name="test-daemon")
    try:
        yield daemon
    finally:
        daemon.request_stop()
        async with asyncio.timeout(10):
            assert await task == 0


def _write_config(settings: Settings, path: Path) -> Path:
    path.write_text(json.dumps(settings.model_dump(mode="json")))  # JSON is YAML
    return path


def test_without_notify_socket_everything_is_a_no_op() -> None:
    notifier = SystemdNotifier.from_environment({"WATCHDOG_USEC": "30000000"})
    assert not notifier.enabled
    assert notifier.watchdog_interval() is None
    assert notifier.notify("READY=1") is False
    notifier.ready("ready")
    notifier.reloading()
    notifier.stopping()


def test_watchdog_interval_is_half_of_watchdog_usec_and_only_for_its_pid() -> None:
    env = {"NOTIFY_SOCKET": "/run/systemd/notify", "WATCHDOG_USEC": "30000000"}
    assert SystemdNotifier.from_environment(env).watchdog_interval() == 15.0
    mine = {**env, "WATCHDOG_PID": str(os.getpid())}
    assert SystemdNotifier.from_environment(mine).watchdog_interval() == 15.0
    other = {**env, "WATCHDOG_PID": str(os.getpid() + 1)}
    assert SystemdNotifier.from_environment(other).watchdog_interval() is None
    assert (
        SystemdNotifier.from_environment({**env, "WATCHDOG_USEC": "x"}).watchdog_interval() is None
    )


def test_abstract_socket_gets_the_messages_in_order() -> None:
    name = f"switchboard-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(0)
        notifier = SystemdNotifier.from_environment({"NOTIFY_SOCKET": f"@{name}"})
        before = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        notifier.ready("ready:  fake\nrunning")
        notifier.reloading()
        notifier.status("reloaded")
        notifier.stopping()
        messages = _drain(sock)
    assert messages[0] == {"READY": "1", "STATUS": "ready: fake running"}
    assert messages[1]["RELOADING"] == "1"
    assert int(messages[1]["MONOTONIC_USEC"]) >= before
    assert messages[2:] == [{"STATUS": "reloaded"}, {"STOPPING": "1"}]


def test_an_absent_socket_is_logged_not_raised(tmp_path: Path) -> None:
    notifier = SystemdNotifier.from_environment({"NOTIFY_SOCKET": str(tmp_path / "gone")})
    assert notifier.notify("READY=1") is False


async def test_ready_watchdog_reload_and_stop_in_order(
    tmp_path: Path, notify_socket: tuple[socket.socket, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sock, address = notify_socket
    monkeypatch.setenv("NOTIFY_SOCKET", address)
    monkeypatch.setenv("WATCHDOG_USEC", "200000")  # a ping every 0.1 s
    monkeypatch.delenv("WATCHDOG_PID", raising=False)
    settings = make_settings(tmp_path / "state")
    config = _write_config(settings, tmp_path / "switchboard.yaml")
    channel = FakeChannel()
    async with _daemon(settings, [channel], config) as daemon:
        started = await _receive_until(sock, "READY")
        assert daemon.ready.is_set()
        assert started[-1] == {"READY": "1", "STATUS": "ready: fake running"}
        assert _not_pings(started) == [started[-1]]
        for _ in range(2):
            assert await _receive(sock, within=2) == {"WATCHDOG": "1"}

        _drain(sock)
        time.sleep(0.35)  # noqa: ASYNC251 - blocks the event loop for 3.5 ping intervals
        assert _drain(sock) == [], "pings must come from the event loop, not a thread"
        assert await _receive(sock, within=2) == {"WATCHDOG": "1"}

        before = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        await channel.inject(dm("/reload", message_id="r1", user="root"))
        await channel.wait_text("Configuration reloaded.")
        reload = _not_pings(await _receive_until(sock, "READY"))
    stop = _not_pings(await _receive_until(sock, "STOPPING"))
    assert [set(message) for message in reload] == [
        {"RELOADING", "MONOTONIC_USEC"},
        {"READY", "STATUS"},
    ]
    assert int(reload[0]["MONOTONIC_USEC"]) >= before
    assert reload[1]["STATUS"] == "ready: fake running"
    assert stop[0]["STOPPING"] == "1"
    assert stop[0]["STATUS"].startswith("stopping")


async def test_ready_waits_for_a_retried_start_and_counts_a_parked_channel(
    tmp_path: Path, notify_socket: tuple[socket.socket, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sock, address = notify_socket
    monkeypatch.setenv("NOTIFY_SOCKET", address)
    monkeypatch.delenv("WATCHDOG_USEC", raising=False)
    flaky = FakeChannel(fake_name="flaky", start_failures=deque([ConnectionError("no route")]))
    parked = FakeChannel(fake_name="locked", start_failures=deque([AUTH_FAILED]))
    async with _daemon(make_settings(tmp_path), [flaky, parked]) as daemon:
        (ready,) = await _receive_until(sock, "READY")
        assert daemon.ready.is_set()
        assert flaky.started.is_set()
    assert ready == {"READY": "1", "STATUS": "ready: flaky running, locked parked"}
    assert (await _receive(sock))["STOPPING"] == "1"


async def test_ready_after_the_deadline_names_the_straggler_and_status_follows_changes(
    tmp_path: Path, notify_socket: tuple[socket.socket, str]
) -> None:
    sock, address = notify_socket
    never = asyncio.Event()
    timing = AnnounceTiming(ready_deadline_s=0.05)
    async with SqliteStore.from_state_dir(tmp_path) as store:
        hub = ChannelHub(store.settings)
        hub.add(FakeChannel(fake_name="tg"))
        hub.set_state("tg", ChannelState.RECONNECTING, "network down")
        ready = asyncio.Event()
        announce = asyncio.create_task(
            announce_channels(hub, SystemdNotifier(address), ready, never.wait, timing)
        )
        try:
            assert await _receive(sock) == {"READY": "1", "STATUS": "ready: tg reconnecting"}
            assert ready.is_set()
            hub.set_state("tg", ChannelState.RUNNING)
            assert await _receive(sock) == {"STATUS": "ready: tg running"}
        finally:
            announce.cancel()
            await asyncio.gather(announce, return_exceptions=True)


def _recv_blocking(sock: socket.socket, key: str, timeout: float = 30.0) -> list[Message]:
    """Non-ping messages up to the first with ``key``, waiting in a plain blocking way."""
    sock.settimeout(timeout)
    seen: list[Message] = []
    while not seen or key not in seen[-1]:
        message = _parse(sock.recv(4096))
        if message != {"WATCHDOG": "1"}:
            seen.append(message)
    return seen


def test_sighup_and_sigterm_of_switchboard_run(
    tmp_path: Path, notify_socket: tuple[socket.socket, str]
) -> None:
    sock, address = notify_socket
    config = tmp_path / "run.yaml"
    config.write_text(
        "config_version: 1\n"
        "state_dir: ${SWITCHBOARD_STATE_DIR}\n"
        "agent: {backend: echo}\n"
        "http: {enabled: false}\n"
        "channels:\n  console: {enabled: true, dm_policy: open}\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SWITCHBOARD_"))}
    env.update(
        SWITCHBOARD_STATE_DIR=str(tmp_path / "state"),
        NOTIFY_SOCKET=address,
        WATCHDOG_USEC="2000000",
    )
    process = subprocess.Popen(  # noqa: S603 - our own CLI
        [sys.executable, "-m", "bot", "run", "-c", str(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )
    try:
        started = _recv_blocking(sock, "READY")
        before = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        process.send_signal(signal.SIGHUP)
        reload = _recv_blocking(sock, "READY")
        process.send_signal(signal.SIGTERM)
        stop = _recv_blocking(sock, "STOPPING")
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    assert started == [{"READY": "1", "STATUS": "ready: console running"}]
    assert reload[0]["RELOADING"] == "1"
    assert int(reload[0]["MONOTONIC_USEC"]) >= before
    assert reload[1:] == [{"READY": "1", "STATUS": "ready: console running"}]
    assert stop[0]["STOPPING"] == "1"
    assert "configuration reloaded by signal:SIGHUP" in err
