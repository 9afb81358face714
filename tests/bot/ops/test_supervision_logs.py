"""What a channel that cannot connect writes to the log (design §12).

One line per retry with the error and the backoff, the traceback once per outage, and one
line when the channel connects again — not a 100-line traceback every few seconds.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from typing_extensions import override

from bot.errors import ChannelError
from bot.hub import ChannelHub, ChannelState
from bot.ops.channel_calls import Deadlines
from bot.ops.routes import RouteTable
from bot.ops.supervision import ChannelSupervision
from bot.ports import ChannelContext
from channels.telegram import TelegramChannel
from store.sqlite import SqliteStore
from tests.bot.harness import make_settings
from tests.bot.ops.test_supervision import FAST, StateLog, _AcceptAll, _run
from tests.channels.health_log import HealthLog
from tests.channels.telegram_support import free_port
from tests.fakes.channel import FakeChannel

SUPERVISION = "bot.ops.supervision"


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[ChannelHub]:
    async with SqliteStore.from_state_dir(tmp_path) as store:
        yield ChannelHub(store.settings)


class RetryLines(logging.Handler):
    """Counts supervision lines about retries; a test waits for the n-th one."""

    def __init__(self, wanted: int) -> None:
        super().__init__()
        self.wanted = wanted
        self.seen = 0
        self.enough = asyncio.Event()

    @override
    def emit(self, record: logging.LogRecord) -> None:
        if "retrying in" in record.getMessage():
            self.seen += 1
            if self.seen >= self.wanted:
                self.enough.set()


def _records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.name == SUPERVISION]


async def test_an_outage_logs_one_traceback_a_line_per_retry_and_the_recovery(
    hub: ChannelHub, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=SUPERVISION)
    channel = FakeChannel()
    channel.start_failures.extend(ChannelError(f"refused\n\x1b[2J #{n}") for n in range(3))
    log = StateLog(hub)
    supervision = await _run(hub, channel, FAST)
    await log.wait_for(ChannelState.RUNNING)
    await supervision.stop()
    records = _records(caplog)
    assert [record.levelno for record in records] == [
        logging.ERROR, logging.WARNING, logging.WARNING, logging.INFO,
    ]  # fmt: skip
    assert records[0].exc_info is not None
    assert all(record.exc_info is None for record in records[1:])
    for number, record in enumerate(records[:3]):
        message = record.getMessage()
        assert f"ChannelError: refused\\n\\x1b[2J #{number}" in message
        assert "retrying in" in message
    assert "connected again after 3 tries" in records[3].getMessage()


async def test_an_unreachable_telegram_logs_its_traceback_once(
    tmp_path: Path, hub: ChannelHub, caplog: pytest.LogCaptureFixture
) -> None:
    """The real adapter against a closed loopback port: every start fails to connect."""
    caplog.set_level(logging.INFO, logger=SUPERVISION)
    block = {
        "enabled": True,
        "token": "1:closed",
        "api_base_url": f"http://127.0.0.1:{free_port()}",
    }
    settings = make_settings(tmp_path / "state", channels={"telegram": block})
    context = ChannelContext(routes=RouteTable(), state_dir=tmp_path, health=HealthLog())
    channel = TelegramChannel(settings, context)
    hub.add(channel)
    lines = RetryLines(4)
    logging.getLogger(SUPERVISION).addHandler(lines)
    supervision = ChannelSupervision(
        hub,
        _AcceptAll(),
        FAST,
        install=hub.replace,
        deadlines=lambda _: Deadlines(start_s=5.0, close_s=5.0),
    )
    supervision.supervise(channel.name, lambda: TelegramChannel(settings, context))
    try:
        async with asyncio.timeout(20):
            await lines.enough.wait()
    finally:
        logging.getLogger(SUPERVISION).removeHandler(lines)
        await supervision.stop()
        await channel.aclose()
    records = _records(caplog)
    assert len(records) >= 4
    assert [record.exc_info is not None for record in records].count(True) == 1
    assert all("retrying in" in record.getMessage() for record in records)
