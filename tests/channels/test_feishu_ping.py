"""The long connection's ping loop says what failed, with one traceback per outage."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

import pytest

from bot.messages import InboundMessage
from bot.ports import Admission
from channels.feishu.connection import LinkConfig, LongConnection, SdkClient
from channels.feishu.discovery import Endpoint
from channels.thread_bridge import ThreadBridge
from tests.channels.health_log import HealthLog

LOGGER = "channels.feishu.connection"


class NoIntake:
    async def __call__(self, message: InboundMessage) -> Admission:
        raise AssertionError("no event is expected")

    async def many(self, messages: Sequence[InboundMessage]) -> list[Admission]:
        raise AssertionError("no event is expected")


class Socket:
    """The SDK's websocket as the ping loop uses it: ``send`` fails while ``down`` says so."""

    def __init__(self, down: list[bool]) -> None:
        self._down = down
        self.sends = 0
        self.done = asyncio.Event()

    async def send(self, data: bytes) -> None:
        index = self.sends
        self.sends += 1
        if index + 1 >= len(self._down):
            self.done.set()
        if index < len(self._down) and self._down[index]:
            raise ConnectionError("socket closed by peer")


async def _ping(down: list[bool]) -> None:
    bridge = ThreadBridge(asyncio.get_running_loop(), NoIntake(), HealthLog())
    config = LinkConfig(app_id="cli_test", app_secret="s3", domain="http://127.0.0.1:9")  # noqa: S106
    link = LongConnection(config, bridge, lambda payload: None)
    client = SdkClient(link, config, Endpoint(url="ws://127.0.0.1:9/ws"))
    socket = Socket(down)
    client._conn, client._service_id, client._ping_interval = socket, "7", 0
    pinging = asyncio.create_task(client._ping_loop(), name="test:feishu-ping")
    try:
        async with asyncio.timeout(10):
            await socket.done.wait()
    finally:
        pinging.cancel()
        with pytest.raises(asyncio.CancelledError):
            await pinging


async def test_failing_pings_name_the_error_with_one_traceback_per_outage(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    await _ping([True, True, True, False, True, False])

    records = [r for r in caplog.records if r.name == LOGGER]
    failures = [r for r in records if r.levelno == logging.WARNING]
    assert len(failures) == 4
    assert all("ConnectionError: socket closed by peer" in r.getMessage() for r in failures)
    assert [r.exc_info is not None for r in failures] == [True, False, False, True]
    back = [r.getMessage() for r in records if r.levelno == logging.INFO]
    assert len(back) == 2
    assert back[0].startswith("feishu ping works again after 3 failure(s)")
    assert back[1].startswith("feishu ping works again after 1 failure(s)")
