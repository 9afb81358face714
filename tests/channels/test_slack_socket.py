"""Socket Mode connection handling: disconnect envelopes, dropped and stalled sockets, a
refused app token — reconnects with health reported and no event lost (design §12)."""

from __future__ import annotations

from pathlib import Path

from tests.channels.slack_support import slack_daemon, slack_settings, wait_text
from tests.fakes.agent import FakeAgent
from tests.fakes.slack_api import FakeSlack


async def test_disconnect_envelope_reconnects_and_loses_nothing(tmp_path: Path) -> None:
    with FakeSlack() as fake:
        agent = FakeAgent()
        async with slack_daemon(slack_settings(tmp_path, fake), fake, agent) as run:
            fake.push_message("before")
            await wait_text(fake, "D0001", "echo: before")
            fake.disconnect()
            fake.push_message("during the refresh")
            await wait_text(fake, "D0001", "echo: during the refresh")
            await run.health.wait_for("connected", count=2)
            await run.settle()
        assert fake.connections() == 2
        assert ("disconnected", "disconnect: refresh_requested") in run.health.events
        assert [r.turn.text for r in agent.runs] == ["before", "during the refresh"]


async def test_dropped_socket_reconnects_promptly(tmp_path: Path) -> None:
    with FakeSlack() as fake:
        agent = FakeAgent()
        settings = slack_settings(tmp_path, fake)
        # a long SDK ping interval: the prompt reconnect is the adapter's watchdog, not the SDK
        async with slack_daemon(settings, fake, agent, ping_interval_s=30) as run:
            fake.drop_socket()
            await run.health.wait_for("disconnected")
            fake.push_message("after the drop")
            await wait_text(fake, "D0001", "echo: after the drop")
            await run.settle()
        assert fake.connections() == 2
        assert run.health.kinds()[-1] == "connected"


async def test_stalled_socket_is_detected_and_replaced(tmp_path: Path) -> None:
    with FakeSlack() as fake:
        fake.ack_timeout_s = 0.5
        agent = FakeAgent()
        async with slack_daemon(slack_settings(tmp_path, fake), fake, agent, ping_interval_s=0.3):
            fake.stall_socket()
            fake.push_message("sent into a dead socket")
            await wait_text(fake, "D0001", "echo: sent into a dead socket", within=8)
        assert fake.connections() >= 2
        assert len(agent.runs) == 1


async def test_refused_app_token_on_reconnect_parks_the_link(tmp_path: Path) -> None:
    with FakeSlack() as fake:
        async with slack_daemon(slack_settings(tmp_path, fake), fake, FakeAgent()) as run:
            fake.revoke_token()
            fake.disconnect()
            await run.health.wait_for("auth_failed")
        [(_, reason)] = [e for e in run.health.events if e[0] == "auth_failed"]
        assert "invalid_auth" in reason
