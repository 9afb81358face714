"""An outage of the DingTalk stream logs one traceback, then a line per retry naming the
error and the backoff, and one line when it is connected again."""

from __future__ import annotations

import asyncio
import logging

import aiohttp
import pytest

from bot.backoff import Backoff
from channels.dingtalk.connection import StreamConfig, StreamLink
from tests.channels.health_log import HealthLog
from tests.fakes.dingtalk_api import FakeDingTalk

LOGGER = "channels.dingtalk.connection"
FAST = Backoff(base_s=0.01, cap_s=0.02)
FAILURES = 3


async def test_failed_reconnects_log_one_traceback_per_outage(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    health = HealthLog()
    with FakeDingTalk() as fake:
        async with aiohttp.ClientSession() as session:
            config = StreamConfig(
                base=fake.origin, client_id=fake.client_id, client_secret=fake.client_secret
            )
            link = StreamLink(session, config, {}, health, reconnect=FAST)
            await link.open()
            try:
                body = {"code": "Service\nUnavailable"}  # untrusted text: escaped in the log
                fake.fail_next("*connections/open", http_status=503, body=body, times=FAILURES)
                await asyncio.to_thread(fake.drop_socket)
                await health.wait_for("connected", count=2, within=10)
            finally:
                await link.close()
    failures = [r for r in caplog.records if r.name == LOGGER and r.levelno >= logging.WARNING]
    assert [r.exc_info is not None for r in failures] == [True] + [False] * (FAILURES - 1)
    for record in failures:
        message = record.getMessage()
        assert "ChannelError" in message
        assert "503" in message
        assert "Service\\nUnavailable" in message
        assert "\n" not in message
        assert "retrying in" in message
    back = [r.getMessage() for r in caplog.records if r.name == LOGGER and "works again" in r.msg]
    assert len(back) == 1
    assert f"after {FAILURES} failure(s)" in back[0]
