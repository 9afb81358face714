"""``group_policy: listen`` end to end: real adapters and SDKs against the fakes (design
"Group context"). Unaddressed group chatter reaches the agent with the next message addressed
to the bot, bounded; only that message is answered; the default policy is unchanged; where
the platform would keep chatter from the bot the daemon and ``check`` say so.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from bot.cli import main
from bot.kernel import Kernel
from bot.pipeline.group_context import CONTEXT_HEADER
from tests.channels import slack_support, telegram_support
from tests.channels.dingtalk_support import dingtalk_daemon, dingtalk_settings
from tests.fakes.agent import FakeAgent
from tests.fakes.common.waiting import eventually
from tests.fakes.dingtalk_api import FakeDingTalk
from tests.fakes.slack_api import FakeSlack
from tests.fakes.telegram_api import FakeTelegram

GROUP = -1001234
CHANNEL = "C0LISTEN"
LISTEN_BOUNDS = {"listen": {"max_messages": 3, "max_age_minutes": 30}}
WARNING = "group_policy listen: "


def _heard(kernel: Kernel, channel: str) -> float:
    value = kernel.delivery.counters.registry.get_sample_value(
        "switchboard_inbound_messages_total", {"channel": channel, "outcome": "heard"}
    )
    return value or 0.0


def _routed(kernel: Kernel, channel: str) -> float:
    """Messages (and edits, recalls) of the channel the router has finished with."""
    return sum(
        sample.value
        for metric in kernel.delivery.counters.registry.collect()
        if metric.name == "switchboard_inbound_messages"
        for sample in metric.samples
        if sample.name.endswith("_total") and sample.labels.get("channel") == channel
    )


async def _chatter_telegram(fake: FakeTelegram, kernel: Kernel, lines: list[str]) -> None:
    for number, line in enumerate(lines, start=1):
        user, name = (7, "Carol") if number % 2 else (8, "Dave")
        fake.push_message(
            line, chat_id=GROUP, chat_type="supergroup", user_id=user, first_name=name
        )
    await eventually(lambda: _heard(kernel, "telegram") == len(lines))


async def test_telegram_listen_gives_the_last_messages_and_answers_only_the_mention(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    agent = FakeAgent()
    with FakeTelegram() as fake:
        fake.set_privacy_mode(on=False)
        settings = telegram_support.telegram_settings(
            tmp_path, fake, telegram={"group_policy": "listen"}, conversations=LISTEN_BOUNDS
        )
        async with telegram_support.telegram_daemon(settings, agent) as run:
            chatter = ["is the deploy done?", "no, CI is red", "flaky test again", "which one?"]
            await _chatter_telegram(fake, run.kernel, chatter)
            text = "@fake_bot can you summarise?"
            fake.push_message(
                text, chat_id=GROUP, chat_type="supergroup",
                entities=telegram_support.mention(text),
            )  # fmt: skip
            await telegram_support.wait_text(fake, GROUP, "echo: can you summarise?")
            await run.settle()
            assert telegram_support.texts(fake, GROUP) == ["echo: can you summarise?"]
            (only,) = agent.runs
            assert only.turn.text == "can you summarise?"
            context = only.turn.chat_context.splitlines()
            assert context[0] == CONTEXT_HEADER
            assert [line.split("] ", 1)[1] for line in context[1:]] == [
                "Dave: no, CI is red",
                "Carol: flaky test again",
                "Dave: which one?",
            ]  # the oldest of four is past max_messages: 3
            assert run.kernel.conversations.sessions.heard.held == 0  # given once
            fake.push_message(
                "@fake_bot and now?", chat_id=GROUP, chat_type="supergroup",
                entities=telegram_support.mention("@fake_bot and now?"),
            )  # fmt: skip
            await agent.wait_runs(2)
            assert agent.runs[1].turn.chat_context == ""
            await run.settle()
    assert WARNING not in caplog.text  # privacy mode is off
    assert "is the deploy done" not in caplog.text  # chatter is never logged


async def test_telegram_default_policy_neither_keeps_nor_gives_chatter(tmp_path: Path) -> None:
    agent = FakeAgent()
    with FakeTelegram() as fake:
        settings = telegram_support.telegram_settings(tmp_path, fake)
        async with telegram_support.telegram_daemon(settings, agent) as run:
            fake.push_message("just chatting", chat_id=GROUP, chat_type="supergroup", user_id=7)
            text = "@fake_bot hello"
            fake.push_message(
                text, chat_id=GROUP, chat_type="supergroup",
                entities=telegram_support.mention(text),
            )  # fmt: skip
            await telegram_support.wait_text(fake, GROUP, "echo: hello")
            await run.settle()
            assert telegram_support.texts(fake, GROUP) == ["echo: hello"]
            assert run.kernel.conversations.sessions.heard.held == 0
        (only,) = agent.runs
        assert only.turn.chat_context == ""


async def test_telegram_privacy_mode_is_warned_about_at_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with FakeTelegram() as fake:  # privacy mode on, as BotFather leaves it
        settings = telegram_support.telegram_settings(
            tmp_path, fake, access={"group_policy": "listen", "dm_policy": "open"}
        )
        async with telegram_support.telegram_daemon(settings, FakeAgent()):
            await eventually(lambda: WARNING in caplog.text)
    (line,) = [r for r in caplog.records if WARNING in r.getMessage()]
    assert line.levelno == logging.WARNING
    assert "channel telegram" in line.getMessage()
    assert "privacy mode" in line.getMessage()


async def test_slack_listen_gives_a_thread_its_chatter_as_edited_without_recalled(
    tmp_path: Path,
) -> None:
    agent = FakeAgent()
    with FakeSlack() as fake:
        settings = slack_support.slack_settings(
            tmp_path, fake, slack={"group_policy": "listen"},
            conversations={"listen": {"max_messages": 10}},
        )  # fmt: skip
        async with slack_support.slack_daemon(settings, fake, agent) as run:
            routed = 0

            async def say(text: str, user: str, thread: str | None = None) -> str:
                nonlocal routed
                ts = fake.push_message(
                    text, user=user, thread_ts=thread, channel=CHANNEL, channel_type="channel"
                )
                routed += 1
                await eventually(lambda: _routed(run.kernel, "slack") == routed)
                return ts

            root = await say("who broke staging?", "UALICE01")
            await say("me, sorry", "UBOB0001", root)
            typo = await say("it was the migraton", "UBOB0001", root)
            secret = await say("the db password is hunter2", "UBOB0001", root)
            await say("lunch?", "UBOB0001")
            assert _heard(run.kernel, "slack") == 5
            fake.push_edit(CHANNEL, typo, "it was the migration")
            fake.push_delete(CHANNEL, secret)
            await eventually(lambda: _routed(run.kernel, "slack") == routed + 2)
            fake.push_message(
                slack_support.mention("how do we roll back?"), user="UALICE01",
                thread_ts=root, also_app_mention=True, channel=CHANNEL, channel_type="channel",
            )  # fmt: skip
            await slack_support.wait_text(fake, CHANNEL, "echo: how do we roll back?")
            await run.settle()
            assert slack_support.texts(fake, CHANNEL) == ["echo: how do we roll back?"]
            # "lunch?" waits for the top level.
            assert run.kernel.conversations.sessions.heard.held == 1
        (only,) = agent.runs
        lines = only.turn.chat_context.splitlines()
        assert lines[0] == CONTEXT_HEADER
        assert [line.split(": ", 1)[1] for line in lines[1:]] == [
            "who broke staging?",
            "me, sorry",
            "it was the migration",
        ]


async def test_dingtalk_listen_warns_at_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with FakeDingTalk() as fake:
        settings = dingtalk_settings(tmp_path, fake, dingtalk={"group_policy": "listen"})
        async with dingtalk_daemon(settings, fake, FakeAgent()):
            await eventually(lambda: WARNING in caplog.text)
    (line,) = [r for r in caplog.records if WARNING in r.getMessage()]
    assert line.levelno == logging.WARNING
    assert "channel dingtalk" in line.getMessage()
    assert "@-mentions the robot" in line.getMessage()


def test_check_warns_where_listen_would_hear_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "switchboard.yaml"
    config.write_text(
        "config_version: 1\n"
        f"state_dir: {tmp_path / 'state'}\n"
        "access: {group_policy: listen}\n"
        "channels:\n"
        "  dingtalk: {enabled: true, client_id: id, client_secret: secret}\n"
        "  feishu: {enabled: true, app_id: cli_1, app_secret: secret}\n"
        "  telegram: {enabled: true, token: '1:x'}\n"  # privacy mode: known only from getMe
        "  slack: {enabled: true, bot_token: xoxb-1, app_token: xapp-1, group_policy: mention}\n"
    )
    assert main(["check", "-c", str(config), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    dingtalk, feishu = [w for w in summary["warnings"] if "delivers" in w]
    assert dingtalk.startswith(f"channels.dingtalk: {WARNING}DingTalk delivers")
    assert feishu.startswith(f"channels.feishu: {WARNING}Feishu delivers")
    assert "im:message.group_msg" in feishu
    assert main(["check", "-c", str(config)]) == 0
    assert f"warning: channels.dingtalk: {WARNING}" in capsys.readouterr().out
