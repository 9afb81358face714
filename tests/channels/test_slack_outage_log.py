"""An outage of the Socket Mode link logs one traceback, then a line per retry and one on
recovery — not a traceback per retry (the kernel's supervisor follows the same rule)."""

from __future__ import annotations

import logging

import aiohttp
import pytest
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.backoff import Backoff
from channels.slack.connection import LinkOptions, LinkWebClient, SocketLink
from tests.channels.health_log import HealthLog
from tests.fakes.slack_api import FakeSlack

LOGGER = "channels.slack.connection"
FAST = Backoff(base_s=0.01, cap_s=0.02)
FAILURES = 4


async def test_failed_reconnects_log_one_traceback_per_outage(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    health = HealthLog()
    with FakeSlack() as fake:
        async with aiohttp.ClientSession() as session:
            web = LinkWebClient(
                health=health, backoff=FAST, base_url=fake.api_base_url, session=session
            )
            sends = AsyncWebClient(
                token=fake.ids.bot_token, base_url=fake.api_base_url, session=session
            )
            app = AsyncApp(client=sends, signing_secret="unused-in-socket-mode")  # noqa: S106
            # a long SDK ping interval: every reconnect after the drop is the link's watchdog's
            options = LinkOptions(
                app_token=fake.ids.app_token, ping_interval_s=30, proxy=None, watch_interval_s=0.02
            )
            link = SocketLink(app, options, web, health)
            await link.open()
            try:
                await health.wait_for("connected")
                fake.fail_next("apps.connections.open", error="internal_error", times=FAILURES)
                fake.drop_socket()
                await health.wait_for("connected", count=2, within=15)
            finally:
                await link.close()
    failures = [r for r in caplog.records if r.name == LOGGER and r.levelno >= logging.WARNING]
    assert [r.exc_info is not None for r in failures] == [True] + [False] * (FAILURES - 1)
    assert all("SlackApiError" in r.getMessage() for r in failures)
    assert all("internal_error" in r.getMessage() for r in failures)
    assert all("retrying in" in r.getMessage() for r in failures)
    back = [r.getMessage() for r in caplog.records if r.name == LOGGER and "works again" in r.msg]
    assert len(back) == 1
    assert f"after {FAILURES} failure(s)" in back[0]
