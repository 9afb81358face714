"""The Socket Mode watchdog: a failed reconnect is logged loudly and retried.

STYLE P6: a broad ``except`` says what failed, at WARNING, with its traceback — an operator
reading the log must see why the bot is not connected, not an INFO line without a cause.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from slack_sdk.errors import SlackApiError

from tests.channels.slack_support import slack_daemon, slack_settings, wait_text
from tests.fakes.agent import FakeAgent
from tests.fakes.slack_api import FakeSlack

CONNECTION_LOGGER = "channels.slack.connection"


async def test_failed_reconnect_is_logged_with_its_traceback_then_retried(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=CONNECTION_LOGGER)
    with FakeSlack() as fake:
        agent = FakeAgent()
        settings = slack_settings(tmp_path, fake)
        # a long SDK ping interval: the reconnect after the drop is the adapter's watchdog's
        async with slack_daemon(settings, fake, agent, ping_interval_s=30) as run:
            fake.fail_next("apps.connections.open", error="internal_error")
            fake.drop_socket()
            await run.health.wait_for("connected", count=2, within=30)
            fake.push_message("after the reconnect")
            await wait_text(fake, "D0001", "echo: after the reconnect", within=15)
            await run.settle()
        opens = fake.calls("apps.connections.open")
    failures = [
        record
        for record in caplog.records
        if record.name == CONNECTION_LOGGER and "reconnect failed" in record.getMessage()
    ]
    assert failures, "the failed reconnect was not logged"
    for record in failures:
        assert record.levelno == logging.WARNING
        assert record.exc_info is not None
        assert isinstance(record.exc_info[1], SlackApiError)
        assert "internal_error" in str(record.exc_info[1])
    assert len(opens) == 3  # the first connection, the failed reconnect, the one that worked
    assert fake.connections() == 2
    assert [r.turn.text for r in agent.runs] == ["after the reconnect"]
