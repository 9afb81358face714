"""A full inbound queue refuses a message before its ack, and the log says so: the platform
delivers it again, so nothing was dropped (design §5 "bounded intake")."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bot.metrics import Counters
from bot.pipeline.bus import InboundBus
from bot.pipeline.intake import Intake
from bot.ports import Admission
from store.sqlite import SqliteStore
from tests.fakes.channel import dm


async def test_a_full_queue_logs_a_refusal_the_platform_redelivers_not_a_drop(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with SqliteStore.from_state_dir(tmp_path) as store:
        counters = Counters()
        intake = Intake(store, InboundBus(capacity=1), counters)
        assert await intake.publish(dm("one", message_id="1")) is Admission.ACCEPTED
        caplog.clear()
        assert await intake.publish(dm("two", message_id="2")) is Admission.QUEUE_FULL
        assert await intake.publish(dm("three", message_id="3")) is Admission.QUEUE_FULL
    lines = [record.getMessage() for record in caplog.records]
    assert not any("dropped" in line for line in lines), lines
    refused = [line for line in lines if line.startswith("refused ")]
    assert len(refused) == 2, lines
    assert all("reason=queue_full" in line and "redeliver" in line for line in refused)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1  # once when the queue fills, not once per message
    assert "daemon.inbound_queue_size=1" in warnings[0].getMessage()
    assert "two" not in " ".join(lines)  # a message's text is never logged
    sample = counters.registry.get_sample_value(
        "switchboard_inbound_messages_total", {"channel": "fake", "outcome": "queue_full"}
    )
    assert sample == 2
