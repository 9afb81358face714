"""A daemon among the replicas of its store: identity, registration, heartbeat, reporting
(design §11, §13), on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import logging
import os
import re
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from bot.config.settings import Settings
from bot.fleet.replica import ReplicaHeartbeat, heartbeat_interval, identify, new_replica_id
from bot.messages import utc_now
from bot.records import UserStatus
from store.postgres import PostgresStore
from store.sqlite import SqliteStore
from tests.bot.harness import http_get, make_settings, running
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import FakeChannel, dm
from tests.fakes.common.waiting import eventually
from tests.postgres import fresh_schema, require_postgres
from tests.store.support import START, ManualClock

EXPIRY_S = 15.0


@pytest.fixture(params=("sqlite", "postgres"))
async def settings(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Settings]:
    """A daemon's settings on each backend (PostgreSQL: a schema of this test's own)."""
    state_dir = tmp_path / "state"
    if request.param == "sqlite":
        yield make_settings(state_dir)
        return
    url = require_postgres()
    async with fresh_schema(url) as schema:
        yield make_settings(state_dir, store={"url": url, "schema": schema})


def test_a_replica_id_names_host_and_pid_and_differs_per_start() -> None:
    first, second = new_replica_id(), new_replica_id()
    assert re.fullmatch(rf"{re.escape(socket.gethostname())}-{os.getpid()}-[0-9a-f]{{6}}", first)
    assert first != second
    assert new_replica_id("blue-1") == "blue-1"


def test_the_heartbeat_beats_at_least_three_times_per_expiry() -> None:
    assert heartbeat_interval(15) == 5
    assert heartbeat_interval(3) == 1


async def test_a_heartbeat_moves_the_row_and_a_lost_row_is_registered_again(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    settings = make_settings(tmp_path, daemon={"replica_id": "r1"})
    async with SqliteStore(tmp_path / "switchboard.db", clock=clock) as store:
        me = await identify(settings, clock=clock)
        heartbeat = ReplicaHeartbeat(store.replicas, me, expiry_s=EXPIRY_S, clock=clock)
        await heartbeat.register()
        clock.advance(10)
        await heartbeat.beat()
        (row,) = await store.replicas.live(clock.advance(10), EXPIRY_S)
        assert (row.id, row.started_at, row.heartbeat_at) == ("r1", START, START.replace(second=10))
        await store.replicas.deregister("r1")  # an operator cleaned up, say
        await heartbeat.beat()
        assert [r.id for r in await store.replicas.live(clock.now, EXPIRY_S)] == ["r1"]
        await heartbeat.deregister()
        assert await store.replicas.live(clock.now, EXPIRY_S) == []


async def test_a_start_forgets_replicas_silent_for_a_day(tmp_path: Path) -> None:
    clock = ManualClock()
    settings = make_settings(tmp_path)
    async with SqliteStore(tmp_path / "switchboard.db", clock=clock) as store:
        killed = ReplicaHeartbeat(
            store.replicas, await identify(settings, clock=clock), expiry_s=15, clock=clock
        )
        await killed.register()
        clock.advance(24 * 3600 + 1)
        fresh = ReplicaHeartbeat(
            store.replicas, await identify(settings, clock=clock), expiry_s=15, clock=clock
        )
        await fresh.register()
        assert await store.replicas.prune(START) == 0  # the killed one's row is gone already
        live = await store.replicas.live(clock.now, EXPIRY_S)
        assert [r.id for r in live] == [fresh.replica.id]


async def test_a_running_daemon_is_a_live_replica_until_it_stops(settings: Settings) -> None:
    channel = FakeChannel()
    async with running(settings, [channel], FakeAgent()) as daemon:
        heartbeat = daemon.daemon.heartbeat
        assert heartbeat is not None
        me = heartbeat.replica
        backend = str(settings.store.backend)
        assert (me.pid, me.host, me.backend) == (os.getpid(), socket.gethostname(), backend)
        store = daemon.kernel.store
        assert [r.id for r in await store.replicas.live(utc_now(), EXPIRY_S)] == [me.id]

        # A shared store also says how many chats this replica holds (none yet).
        leases = {"leases_held": 0} if backend == "postgres" else {}
        status, body = await http_get(daemon.daemon, "/healthz")
        assert status == 200
        assert json.loads(body) == {"status": "ok", "replica": me.id, "backend": backend, **leases}
        status, body = await http_get(daemon.daemon, "/readyz")
        assert status == 200, body
        assert json.loads(body) == {
            "ready": True,
            "reasons": [],
            "replica": me.id,
            "backend": backend,
            **leases,
        }
        _, text = await http_get(daemon.daemon, "/metrics")
        info = [
            sample
            for family in text_string_to_metric_families(text)
            for sample in family.samples
            if sample.name == "switchboard_replica_info"
        ]
        assert [(s.labels, s.value) for s in info] == [
            ({"replica": me.id, "backend": backend}, 1.0)
        ]
        await channel.inject(dm("hello", message_id="1"))
        await channel.wait_text("echo: hello")
    # A clean stop deregistered it: the next start is the only live replica.
    async with running(settings, [FakeChannel()], FakeAgent()) as again:
        assert again.daemon.heartbeat is not None
        live = await again.kernel.store.replicas.live(utc_now(), EXPIRY_S)
        assert [r.id for r in live] == [again.daemon.heartbeat.replica.id]
        assert again.daemon.heartbeat.replica.id != me.id


async def test_the_heartbeat_is_a_kernel_task_that_keeps_the_row_fresh(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, daemon={"replica_id": "blue", "replica_expiry_s": 0.15})
    async with running(settings, [FakeChannel()], FakeAgent()) as daemon:
        heartbeat = daemon.daemon.heartbeat
        assert heartbeat is not None
        assert heartbeat.replica.id == "blue"
        assert not daemon.daemon.kernel_tasks.task("replica").done()

        async def beaten_twice() -> bool:
            return heartbeat.beats >= 2

        await eventually(beaten_twice)
        (row,) = await daemon.kernel.store.replicas.live(utc_now(), 10)
        assert row.heartbeat_at > row.started_at


async def test_a_postgresql_store_with_a_local_workspace_dir_is_warned_about(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = require_postgres()
    workspaces = tmp_path / "workspaces"
    caplog.set_level(logging.WARNING, logger="bot.fleet.shared_storage")
    async with fresh_schema(url) as schema:
        settings = make_settings(
            tmp_path / "state", store={"url": url, "schema": schema}, workspace_dir=str(workspaces)
        )
        async with running(settings, [FakeChannel()], FakeAgent()):
            pass
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert f"workspace_dir {workspaces} looks local" in warnings[0]
    assert "several replicas need it on shared storage" in warnings[0]


async def test_a_sqlite_store_says_nothing_about_the_workspace(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bot.fleet.shared_storage")
    async with running(make_settings(tmp_path), [FakeChannel()], FakeAgent()):
        pass
    assert not [r for r in caplog.records if r.name == "bot.fleet.shared_storage"]


async def test_workspaces_live_under_workspace_dir(tmp_path: Path) -> None:
    """``workspace_dir`` moves ``threads/``; without it they stay under ``state_dir``."""
    state_dir, workspaces = tmp_path / "state", tmp_path / "shared"
    settings = make_settings(state_dir, workspace_dir=str(workspaces))
    channel = FakeChannel()
    async with running(settings, [channel], FakeAgent()) as daemon:
        await channel.inject(dm("hello", message_id="1"))
        await channel.wait_text("echo: hello")
        await daemon.kernel.conversations.lanes.wait_idle()
    assert [p.name for p in (workspaces / "threads").iterdir()]
    assert not (state_dir / "threads").exists()
    default = make_settings(tmp_path / "plain")
    assert default.workspace_root == default.state_dir
    blank = make_settings(tmp_path / "plain", workspace_dir="", daemon={"replica_id": " "})
    assert (blank.workspace_root, blank.daemon.replica_id) == (blank.state_dir, None)


async def test_two_daemons_on_one_postgresql_schema_know_each_other(tmp_path: Path) -> None:
    """Two replicas: each is live for the other and in ``status``; an approval made through
    one reaches the other's cache as it commits (NOTIFY), not at a periodic check."""
    url = require_postgres()
    async with fresh_schema(url) as schema:
        store = {"url": url, "schema": schema}
        first = make_settings(tmp_path / "a", store=store, daemon={"replica_id": "a"})
        second = make_settings(tmp_path / "b", store=store, daemon={"replica_id": "b"})
        async with (
            running(first, [FakeChannel()], FakeAgent()) as a,
            running(second, [FakeChannel()], FakeAgent()) as b,
        ):
            for daemon in (a, b):
                live = await daemon.kernel.store.replicas.live(utc_now(), EXPIRY_S)
                assert [(r.id, r.backend) for r in live] == [("a", "postgres"), ("b", "postgres")]
            access = b.kernel.store.access
            assert await access.status("fake", "carol") is None  # cached from now on
            await a.kernel.store.access.set_status("fake", "carol", UserStatus.APPROVED, "admin")

            async def b_sees_it() -> bool:
                return await access.status("fake", "carol") is UserStatus.APPROVED

            await eventually(b_sees_it, within=1.0)
        async with PostgresStore(url, schema=schema) as after:
            assert await after.replicas.live(utc_now(), EXPIRY_S) == []  # both deregistered


async def test_replicas_on_one_store_share_the_bot_wide_send_budget(tmp_path: Path) -> None:
    """The second replica takes its part at start, the first gives it up at its next beat."""
    url = require_postgres()
    async with fresh_schema(url) as schema:
        store = {"url": url, "schema": schema}
        daemon = {"replica_expiry_s": 3}
        first = make_settings(tmp_path / "a", store=store, daemon={"replica_id": "a", **daemon})
        second = make_settings(tmp_path / "b", store=store, daemon={"replica_id": "b", **daemon})
        async with running(first, [FakeChannel()], FakeAgent()) as a:
            assert a.kernel.delivery.limiter.share == 1.0  # alone
            async with running(second, [FakeChannel()], FakeAgent()) as b:
                assert b.kernel.delivery.limiter.share == 0.5

                async def halved() -> bool:
                    return a.kernel.delivery.limiter.share == 0.5

                await eventually(halved, within=10.0)
