"""An outage of Telegram's long polling logs one traceback, then a line per retry naming the
error and the backoff, and one line when polling works again."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

import pytest
import telegram

from bot.backoff import Backoff
from channels.telegram.polling import Poller
from tests.channels.health_log import HealthLog
from tests.fakes.telegram_api import FakeTelegram

LOGGER = "channels.telegram.polling"
FAST = Backoff(base_s=0.01, cap_s=0.02)
FAILURES = 3


async def _nothing_to_hand_over(updates: Sequence[telegram.Update]) -> int:
    return len(updates)


async def test_failed_polls_log_one_traceback_per_outage(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    health = HealthLog()
    with FakeTelegram() as fake:
        fake.fail_next("getUpdates", status=502, description="Bad\nGateway", times=FAILURES)
        bot = telegram.Bot(fake.token, base_url=fake.base_url, base_file_url=fake.base_file_url)
        async with bot:
            poller = Poller(
                bot, _nothing_to_hand_over, health, timeout_s=0, secret=fake.token, reconnect=FAST
            )
            polling = asyncio.create_task(poller.run(), name="test:telegram-poll")
            try:
                await health.wait_for("connected", within=10)
            finally:
                polling.cancel()
                await asyncio.gather(polling, return_exceptions=True)
    failures = [r for r in caplog.records if r.name == LOGGER and r.levelno >= logging.WARNING]
    assert [r.exc_info is not None for r in failures] == [True] + [False] * (FAILURES - 1)
    for record in failures:
        message = record.getMessage()
        assert "NetworkError: Bad\\nGateway" in message
        assert "retrying in" in message
        assert fake.token not in message
    back = [r.getMessage() for r in caplog.records if r.name == LOGGER and "works again" in r.msg]
    assert len(back) == 1
    assert f"after {FAILURES} failure(s)" in back[0]
