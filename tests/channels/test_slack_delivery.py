"""Delivery through the real adapter: the rendering ladder on ``invalid_blocks`` and error
kinds as the kernel's outbox sees them (design §8)."""

from __future__ import annotations

from pathlib import Path

from bot.records import OutboxState
from tests.channels.slack_support import slack_daemon, slack_settings, wait_text
from tests.fakes.agent import FakeAgent
from tests.fakes.common.waiting import eventually
from tests.fakes.slack_api import FakeSlack


async def test_refused_blocks_fall_back_to_mrkdwn_then_plain(tmp_path: Path) -> None:
    with FakeSlack() as fake:
        agent = FakeAgent(reply_override="a **bold** claim")
        async with slack_daemon(slack_settings(tmp_path, fake), fake, agent) as run:
            fake.fail_next("chat.postMessage", error="invalid_blocks")
            fake.push_message("first")
            await fake.await_call("chat.postMessage", lambda c: c.ok)
            fake.fail_next("chat.postMessage", error="invalid_blocks", times=2)
            fake.push_message("second")
            await fake.await_until(lambda: len(fake.channel_messages("D0001")) == 2)
            await run.settle()
        sent = [c.params for c in fake.calls("chat.postMessage") if c.ok]
        assert sent[0]["text"] == "a *bold* claim"  # mrkdwn rung
        assert "blocks" not in sent[0]
        assert (sent[1]["text"], sent[1]["mrkdwn"]) == ("a **bold** claim", False)  # plain


async def test_a_missing_channel_is_not_retried(tmp_path: Path) -> None:
    with FakeSlack() as fake:
        async with slack_daemon(slack_settings(tmp_path, fake), fake, FakeAgent()) as run:
            fake.fail_next("chat.postMessage", error="channel_not_found")
            fake.push_message("anyone?")
            await fake.await_call("chat.postMessage")

            async def final_and_reaction_dead() -> bool:
                return len(await run.kernel.store.outbox.listing(OutboxState.DEAD)) >= 2

            await eventually(final_and_reaction_dead)
            await run.settle()
            dead = await run.kernel.store.outbox.listing(OutboxState.DEAD)
        assert len(fake.calls("chat.postMessage")) == 1
        assert any("target_not_found" in (row.last_error or "") for row in dead)


async def test_server_errors_are_retried(tmp_path: Path) -> None:
    with FakeSlack() as fake:
        async with slack_daemon(slack_settings(tmp_path, fake), fake, FakeAgent()) as run:
            fake.fail_next("chat.postMessage", status=500)
            fake.push_message("flaky")
            await wait_text(fake, "D0001", "echo: flaky", within=8)
            await run.settle()
        assert [c.ok for c in fake.calls("chat.postMessage")] == [False, True]
