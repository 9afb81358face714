"""Health, readiness and metrics on the daemon's HTTP server (design §13)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from bot.messages import utc_now
from bot.records import Replica
from tests.bot.harness import Running, http_get, make_settings, running
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import FakeChannel, dm


async def _get(daemon: Running, path: str) -> tuple[int, str]:
    return await http_get(daemon.daemon, path)


async def test_readyz_follows_channel_health(tmp_path: Path) -> None:
    channel = FakeChannel()
    async with running(make_settings(tmp_path), [channel], FakeAgent()) as daemon:
        assert (await _get(daemon, "/healthz"))[0] == 200
        status, body = await _get(daemon, "/readyz")
        assert status == 200, body
        assert '"ready": true' in body
        health = daemon.kernel.hub.reporter("fake")
        health.disconnected("socket closed by peer")
        status, body = await _get(daemon, "/readyz")
        assert status == 503
        assert "channel fake: reconnecting (socket closed by peer)" in body
        health.connected()
        assert (await _get(daemon, "/readyz"))[0] == 200
        health.auth_failed("token revoked")
        status, body = await _get(daemon, "/readyz")
        assert status == 503
        assert "parked" in body


async def test_metrics_count_a_handled_message(tmp_path: Path) -> None:
    channel = FakeChannel()
    async with running(make_settings(tmp_path), [channel], FakeAgent()) as daemon:
        await channel.inject(dm("hello", message_id="1"))
        await channel.inject(dm("hello", message_id="1"))
        await channel.wait_text("echo: hello")
        await daemon.kernel.conversations.lanes.wait_idle()
        await daemon.kernel.delivery.outbox.wait_idle()
        status, text = await _get(daemon, "/metrics")
    assert status == 200
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }
    accepted = (
        "switchboard_inbound_messages_total",
        (("channel", "fake"), ("outcome", "accepted")),
    )
    duplicate = (
        "switchboard_inbound_messages_total",
        (("channel", "fake"), ("outcome", "duplicate")),
    )
    assert samples[accepted] == 1
    assert samples[duplicate] == 1
    assert samples[("switchboard_run_duration_seconds_count", (("outcome", "ok"),))] == 1
    assert samples[("switchboard_outbox_rows", (("state", "pending"),))] == 0
    assert samples[("switchboard_channel_up", (("channel", "fake"),))] == 1


async def test_metrics_show_a_peer_that_stopped_heartbeating(tmp_path: Path) -> None:
    """A replica that died without deregistering stays listed on the store: every live replica
    reports its heartbeat age, which grows (the SwitchboardReplicaHeartbeatMissing alert)."""
    async with running(make_settings(tmp_path), [FakeChannel()], FakeAgent()) as daemon:
        last_beat = utc_now() - timedelta(minutes=10)
        gone = Replica(
            id="host-b-2-bbbbbb",
            host="host-b",
            pid=2,
            version="0",
            backend="sqlite",
            started_at=last_beat,
            heartbeat_at=last_beat,
        )
        await daemon.kernel.store.replicas.register(gone)
        status, text = await _get(daemon, "/metrics")
    assert status == 200
    ages = {
        sample.labels["replica"]: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "switchboard_replica_heartbeat_age_seconds"
    }
    assert ages["host-b-2-bbbbbb"] >= 600
    assert len(ages) == 2  # and this replica itself, just beaten
    assert min(ages.values()) < 60
