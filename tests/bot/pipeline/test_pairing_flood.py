"""A flood of strangers cannot close pairing (design §10): the queue of pending requests is
bounded per channel, the oldest request makes room for a new one, and the operator hears of it."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from bot.kernel import Kernel
from bot.messages import utc_now
from tests.bot.harness import make_settings, routed, running
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import FakeChannel, dm

PAIRING = {"dm_policy": "pairing", "admins": ["fake:root"]}
CODE = re.compile(r"access code is `([A-Z2-9]{8})`")


def codes_sent(channel: FakeChannel) -> list[str]:
    return [m.group(1) for text in channel.texts() if (m := CODE.search(text))]


async def wait_codes(channel: FakeChannel, count: int) -> None:
    await channel.wait_for(lambda _sent: len(codes_sent(channel)) >= count)


def evictions(kernel: Kernel) -> float:
    value = kernel.delivery.counters.registry.get_sample_value(
        "switchboard_pairing_evictions_total", {"channel": "fake"}
    )
    return value or 0.0


async def test_strangers_beyond_the_old_bound_of_three_still_get_codes(tmp_path: Path) -> None:
    channel, agent = FakeChannel(), FakeAgent()
    async with running(make_settings(tmp_path, access=PAIRING), [channel], agent) as daemon:
        for n in range(6):
            await channel.inject(dm("hi", message_id=str(n), user=f"stranger{n}"))
        await routed(daemon.kernel, 6)
        await wait_codes(channel, 6)
        pending = await daemon.kernel.store.access.pending_pairings(utc_now(), "fake")
    assert not any("try again later" in text for text in channel.texts())
    assert len(pending) == 6
    assert agent.runs == []


async def test_a_full_queue_evicts_the_oldest_request_and_warns_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="bot.pipeline.access")
    access = {**PAIRING, "max_pending_pairings": 2}
    channel, agent = FakeChannel(), FakeAgent()
    async with running(make_settings(tmp_path, access=access), [channel], agent) as daemon:
        for n, user in enumerate(["ann", "bob", "cid", "dan"]):
            await channel.inject(dm("let me in", message_id=str(n), user=user))
            await wait_codes(channel, n + 1)
        ann_code = codes_sent(channel)[0]
        pending = await daemon.kernel.store.access.pending_pairings(utc_now(), "fake")
        await channel.inject(dm(f"/approve {ann_code}", message_id="9", user="root"))
        await channel.wait_text("No pending request with code")
        counted = evictions(daemon.kernel)
    assert [request.user_id for request in pending] == ["cid", "dan"]
    assert counted == 2
    warnings = [r for r in caplog.records if "pairing" in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert "max_pending_pairings" in warnings[0].getMessage()
