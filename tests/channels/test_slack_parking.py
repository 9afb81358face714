"""A refused Slack token parks the Slack channel while Telegram keeps working in the same
daemon (design §8 auth_failed, §12: one channel failing never stops the others)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from bot.config.settings import Settings
from bot.hub import ChannelState
from bot.ops.routes import RouteTable
from bot.ports import ChannelContext
from channels.telegram import TelegramChannel
from tests.channels import telegram_support as tg
from tests.channels.health_log import HealthLog
from tests.channels.slack_support import SlackRun, slack_daemon, slack_settings
from tests.fakes.agent import FakeAgent
from tests.fakes.common.waiting import eventually
from tests.fakes.slack_api import FakeSlack
from tests.fakes.telegram_api import FakeTelegram


def both_settings(tmp_path: Path, slack: FakeSlack, telegram: FakeTelegram) -> Settings:
    block = {"enabled": True, "token": telegram.token, "api_base_url": telegram.api_origin}
    access = {"dm_policy": "open", "admins": ["slack:UADMIN"]}
    return slack_settings(tmp_path, slack, channels={"telegram": block}, access=access)


@asynccontextmanager
async def both(
    tmp_path: Path, slack: FakeSlack, telegram: FakeTelegram, agent: FakeAgent, *, wait: bool
) -> AsyncIterator[SlackRun]:
    settings = both_settings(tmp_path, slack, telegram)
    context = ChannelContext(routes=RouteTable(), state_dir=tmp_path, health=HealthLog())
    tele = TelegramChannel(settings, context, capabilities=tg.FAST_CAPS, poll_timeout_s=2)
    async with slack_daemon(settings, slack, agent, others=[tele], wait_connected=wait) as run:
        yield run


async def parked(run: SlackRun) -> None:
    async def check() -> bool:
        return run.kernel.hub.state("slack") is ChannelState.PARKED

    await eventually(check)


@pytest.mark.parametrize("when", ["at start", "while running"])
async def test_revoked_token_parks_slack_while_telegram_answers(tmp_path: Path, when: str) -> None:
    with FakeSlack() as slack, FakeTelegram() as telegram:
        agent = FakeAgent()
        if when == "at start":
            slack.revoke_token()
        async with both(tmp_path, slack, telegram, agent, wait=when != "at start") as run:
            if when == "while running":
                slack.revoke_token()
                slack.push_message("are you there?")
            await parked(run)
            telegram.push_message("hello from telegram")
            await tg.wait_text(telegram, 42, "echo: hello from telegram")
            assert run.kernel.hub.state("telegram") is ChannelState.RUNNING
        assert run.kernel.hub.reason("slack").startswith("auth_failed")
        assert [r.turn.text for r in agent.runs][-1] == "hello from telegram"
        assert slack.channel_messages("D0001") == []
