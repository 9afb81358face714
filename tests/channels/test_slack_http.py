"""HTTP Events mode: signatures checked by bolt, ``url_verification`` answered, and the route
served by the daemon's own HTTP server when the daemon builds the adapter (design §13, §14)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from bot.hub import ChannelState
from tests.bot.harness import http_get, registry_daemon
from tests.channels.slack_support import EVENTS_PATH, slack_daemon, slack_settings, wait_text
from tests.fakes.agent import FakeAgent
from tests.fakes.common.waiting import eventually
from tests.fakes.slack.payloads import event_callback
from tests.fakes.slack_api import FakeSlack


def _event_body(fake: FakeSlack, text: str) -> bytes:
    event = {
        "type": "message", "channel": "D0001", "channel_type": "im", "user": "UHUMAN01",
        "text": text, "ts": "1700000000.000100", "event_ts": "1700000000.000100",
    }  # fmt: skip
    return json.dumps(event_callback(fake.ids, event, "EvFORGED")).encode()


async def test_bad_signature_is_refused_and_nothing_runs(tmp_path: Path) -> None:
    with FakeSlack() as fake:
        agent = FakeAgent()
        settings = slack_settings(tmp_path, fake, mode="http")
        fake.add_channel("D0001", channel_type="im")
        async with slack_daemon(settings, fake, agent) as run:
            body = _event_body(fake, "forged")
            forged = await asyncio.to_thread(fake.post_signed, body, bad_signature=True)
            stale = await asyncio.to_thread(
                fake.post_signed, body, timestamp=int(time.time()) - 3600
            )
            genuine = await asyncio.to_thread(fake.post_signed, _event_body(fake, "genuine"))
            await wait_text(fake, "D0001", "echo: genuine")
            await run.settle()
        assert (forged, stale, genuine) == (401, 401, 200)
        assert [r.turn.text for r in agent.runs] == ["genuine"]


async def test_url_verification_is_answered(tmp_path: Path) -> None:
    with FakeSlack() as fake:
        settings = slack_settings(tmp_path, fake, mode="http")
        async with slack_daemon(settings, fake, FakeAgent()) as run:
            answer = await asyncio.to_thread(fake.verify_url, run.events_url, challenge="c-123")
        assert answer == {"challenge": "c-123"}


async def test_daemon_serves_the_events_route_and_reports_ready(tmp_path: Path) -> None:
    with FakeSlack() as fake:
        agent = FakeAgent()
        settings = slack_settings(tmp_path, fake, mode="http")
        async with registry_daemon(settings, agent) as daemon:
            assert daemon.http is not None
            fake.set_http_target(f"http://127.0.0.1:{daemon.http.port}{EVENTS_PATH}")
            assert daemon.kernel is not None
            hub = daemon.kernel.hub

            async def running() -> bool:
                return hub.state("slack") is ChannelState.RUNNING

            await eventually(running)
            fake.push_message("through the daemon's server")
            await wait_text(fake, "D0001", "echo: through the daemon's server")
            status, body = await http_get(daemon, "/readyz")
        assert status == 200, body
