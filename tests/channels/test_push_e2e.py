"""Proactive sends through each real adapter against its loopback fake (design §19): the
platform's own way to message a chat nobody asked from, reached by the push API or by
``switchboard send`` beside the running daemon."""

from __future__ import annotations

import asyncio
import contextlib
import io
from pathlib import Path
from typing import Any

from bot.app import Daemon
from bot.cli import main
from tests.bot.harness import routed_count
from tests.bot.ops.push_support import TOKEN, post
from tests.channels import dingtalk_support, feishu_support, slack_support, telegram_support
from tests.fakes.agent import FakeAgent
from tests.fakes.common.waiting import eventually
from tests.fakes.dingtalk_api import FakeDingTalk
from tests.fakes.feishu_api import FakeFeishu
from tests.fakes.slack_api import FakeSlack
from tests.fakes.telegram_api import FakeTelegram

PUSH: dict[str, Any] = {
    "http": {"host": "127.0.0.1", "port": 0, "push_api": {"enabled": True, "token": TOKEN}}
}


def _cli(*args: str | Path) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        status = main([str(arg) for arg in args])
    return status, out.getvalue()


def _routed(run: telegram_support.TelegramRun) -> bool:
    return routed_count(run.kernel) >= 1


def _config(tmp_path: Path, fake: FakeTelegram) -> Path:
    path = tmp_path / "switchboard.yaml"
    path.write_text(
        f"config_version: 1\nstate_dir: {tmp_path}\n"
        "http: {host: 127.0.0.1, port: 0}\n"
        f"channels: {{telegram: {{enabled: true, token: '{fake.token}',"
        f" api_base_url: '{fake.api_origin}'}}}}\n"
    )
    return path


async def test_telegram_send_from_the_cli_reaches_a_forum_topic(tmp_path: Path) -> None:
    with FakeTelegram() as fake:
        settings = telegram_support.telegram_settings(tmp_path, fake)
        async with telegram_support.telegram_daemon(settings, FakeAgent()) as run:
            fake.push_message(
                "chatter", chat_id=-100777, chat_type="supergroup", is_forum=True,
                message_thread_id=5,
            )  # fmt: skip
            await eventually(
                lambda: run.kernel.conversations.bus.depth == 0 and _routed(run), within=10
            )
            config = _config(tmp_path, fake)
            sent = await asyncio.to_thread(
                _cli, "send", "-c", config, "--channel", "telegram", "--chat", "-100777",
                "--topic", "topic:5", "--idempotency-key", "k1", "*build* green",
            )  # fmt: skip
            again = await asyncio.to_thread(
                _cli, "send", "-c", config, "--channel", "telegram", "--chat", "-100777",
                "--chat-type", "group", "--topic", "topic:5", "--idempotency-key", "k1",
                "*build* green",
            )  # fmt: skip
            await eventually(lambda: bool(fake.calls("sendMessage")), within=10)
            delivery_id = sent[1].splitlines()[0]

            async def done() -> bool:
                status, out = await asyncio.to_thread(_cli, "delivery", "-c", config, delivery_id)
                return status == 0 and "status       sent" in out

            await eventually(done, within=10)
            await run.settle()
        calls = fake.calls("sendMessage")
    assert sent[0] == 0
    assert again[0] == 0
    assert again[1].splitlines()[0] == delivery_id
    assert len(calls) == 1
    assert calls[0].params["chat_id"] == "-100777"
    assert calls[0].params["message_thread_id"] == "5"
    assert "reply_parameters" not in calls[0].params


def _daemon(run: object) -> Daemon:
    daemon = getattr(run, "daemon", None)
    assert isinstance(daemon, Daemon)
    return daemon


async def test_slack_push_posts_into_the_thread(tmp_path: Path) -> None:
    with FakeSlack() as fake:
        settings = slack_support.slack_settings(tmp_path, fake, **PUSH)
        async with slack_support.slack_daemon(settings, fake, FakeAgent()) as run:
            fake.push_message("hello", channel="C0001", channel_type="channel")
            await run.settle()
            parent = fake.channel_messages("C0001")
            body = {
                "channel": "slack", "chat": "C0001", "chat_type": "group",
                "topic": "1700000000.000100", "text": "release *out*",
            }  # fmt: skip
            status, answer, _ = await post(_daemon(run), body, key="release-7")
            await slack_support.wait_text(fake, "C0001", "release")
            again = await post(_daemon(run), body, key="release-7")
            await run.settle()
        messages = fake.channel_messages("C0001")
    assert status == 202, answer
    assert again[1]["delivery_id"] == answer["delivery_id"]  # the same delivery: nothing added
    assert again[1]["repeated"] is True
    assert [m.get("thread_ts") for m in messages if m not in parent] == ["1700000000.000100"]


async def test_feishu_push_creates_a_message_in_the_chat(tmp_path: Path) -> None:
    with FakeFeishu() as fake:
        settings = feishu_support.feishu_settings(tmp_path, fake, **PUSH)
        async with feishu_support.feishu_daemon(settings, fake, FakeAgent()) as run:
            await run.send("chatter", chat_id=feishu_support.GROUP, chat_type="group")
            await eventually(lambda: routed_count(run.kernel) >= 1, within=10)
            body = {"channel": "feishu", "chat": feishu_support.GROUP, "text": "weekly **digest**"}
            status, answer, _ = await post(_daemon(run), body, key="digest-1")
            await feishu_support.wait_text(fake, feishu_support.GROUP, "weekly")
            again = await post(_daemon(run), body, key="digest-1")
            await run.settle()
        shown = feishu_support.texts(fake, feishu_support.GROUP)
    assert status == 202, answer
    assert (again[1]["delivery_id"], again[1]["repeated"]) == (answer["delivery_id"], True)
    assert sum("weekly" in text for text in shown) == 1


async def test_dingtalk_push_uses_the_openapi_for_groups_and_dms(tmp_path: Path) -> None:
    with FakeDingTalk() as fake:
        settings = dingtalk_support.dingtalk_settings(tmp_path, fake, **PUSH)
        async with dingtalk_support.dingtalk_daemon(settings, fake, FakeAgent()) as run:
            daemon = _daemon(run)
            # Both chats wrote lately: the DM has a live session webhook, which a push (no
            # reply target) must not use; the journal tells each chat's type.
            fake.push_message(
                "chatter", conversation_type="2", conversation_id=dingtalk_support.GROUP
            )
            fake.push_message(
                "hello", conversation_type="1", sender_staff_id=dingtalk_support.ALICE
            )
            await eventually(lambda: routed_count(run.kernel) >= 2, within=10)
            await run.settle()
            before = len(fake.sent_messages())
            group = {"channel": "dingtalk", "chat": dingtalk_support.GROUP, "text": "group notice"}
            one = {"channel": "dingtalk", "chat": dingtalk_support.ALICE, "text": "private notice"}
            answers = [await post(daemon, group, key="g1"), await post(daemon, one, key="o1")]
            await dingtalk_support.wait_text(fake, None, "private notice")
            await dingtalk_support.wait_text(fake, None, "group notice")
            again = [await post(daemon, group, key="g1"), await post(daemon, one, key="o1")]
            await run.settle()
        sent = [(m.text, m.via) for m in fake.sent_messages()[before:]]
    assert [answer[0] for answer in answers] == [202, 202]
    assert [a[1]["delivery_id"] for a in again] == [a[1]["delivery_id"] for a in answers]
    assert all(a[1]["repeated"] for a in again)
    assert sorted(sent) == [("group notice", "group"), ("private notice", "otom")]
