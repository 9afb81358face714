"""Where the per-platform schedule tests talk: for each platform, a conversation with a topic
where it has one (a Telegram forum topic, a Slack thread, a Feishu reply chain, a DingTalk
group), how a user writes in it, and what of the bot's messages landed in it.

Each place runs the real adapter inside the real daemon against its loopback fake
(``*_support``), so a firing goes out by the platform's own proactive call (design §19).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.config.settings import Settings
from bot.ports import AgentBackend
from tests.channels import dingtalk_support, feishu_support, slack_support, telegram_support
from tests.fakes.dingtalk_api import FakeDingTalk
from tests.fakes.feishu_api import FakeFeishu
from tests.fakes.slack_api import FakeSlack
from tests.fakes.telegram_api import FakeTelegram

FORUM = -100777
TOPIC = 5
SLACK_CHANNEL = "C0001"

Daemon = Callable[[Settings, Any, AgentBackend], AbstractAsyncContextManager[Any]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Place:
    """One platform's conversation: ``ask(fake, run, text)`` writes a user's message in it (to
    replica ``run`` where the platform is told where to deliver) and returns what identifies
    its topic for ``shown``; ``shown(fake, topic, needle)`` counts the bot's
    messages in that topic showing ``needle``."""

    name: str
    fake: Callable[[], AbstractContextManager[Any]]
    settings: Callable[..., Settings]
    daemon: Daemon
    ask: Callable[[Any, Any, str], Awaitable[str]]
    shown: Callable[[Any, str, str], int]


def _telegram_daemon(settings: Settings, fake: FakeTelegram, agent: AgentBackend) -> Any:
    del fake
    return telegram_support.telegram_daemon(settings, agent)


async def _telegram_ask(fake: FakeTelegram, run: object, text: str) -> str:
    del run
    fake.push_message(
        text, chat_id=FORUM, chat_type="supergroup", is_forum=True, message_thread_id=TOPIC
    )
    return str(TOPIC)


def _telegram_shown(fake: FakeTelegram, topic: str, needle: str) -> int:
    return sum(
        1
        for message in fake.chat_messages(FORUM)
        if needle in str(message.get("text") or "")
        and str(message.get("message_thread_id")) == topic
    )


async def _slack_ask(fake: FakeSlack, run: object, text: str) -> str:
    del run
    return fake.push_message(
        slack_support.mention(text), channel=SLACK_CHANNEL, channel_type="channel"
    )


def _slack_shown(fake: FakeSlack, topic: str, needle: str) -> int:
    return sum(
        1
        for message in fake.channel_messages(SLACK_CHANNEL)
        if needle in str(message.get("text") or "") and message.get("thread_ts") == topic
    )


def _feishu_daemon(settings: Settings, fake: FakeFeishu, agent: AgentBackend) -> Any:
    return feishu_support.feishu_daemon(settings, fake, agent)


def _feishu_settings(state_dir: Path, fake: FakeFeishu, **sections: Any) -> Settings:
    """Webhook mode: lark-oapi's long connection is one per process (PLATFORMS.md), and these
    replicas share a process; webhooks run on every replica (design §11)."""
    return feishu_support.feishu_settings(state_dir, fake, mode="webhook", **sections)


async def _feishu_ask(fake: FakeFeishu, run: feishu_support.FeishuRun, text: str) -> str:
    fields = feishu_support.at_bot(fake, text)
    return await run.send(**fields)


def _feishu_shown(fake: FakeFeishu, topic: str, needle: str) -> int:
    return sum(
        1
        for message in fake.sent_messages(feishu_support.GROUP)
        if needle in feishu_support.shown_text(fake, message)
        and topic in {message.root_id, message.parent_id}
    )


def _dingtalk_daemon(settings: Settings, fake: FakeDingTalk, agent: AgentBackend) -> Any:
    return dingtalk_support.dingtalk_daemon(settings, fake, agent)


async def _dingtalk_ask(fake: FakeDingTalk, run: object, text: str) -> str:
    del run
    fake.push_message(text, conversation_type="2", conversation_id=dingtalk_support.GROUP)
    return dingtalk_support.GROUP


def _dingtalk_shown(fake: FakeDingTalk, topic: str, needle: str) -> int:
    return sum(
        1
        for message in fake.sent_messages()
        if needle in message.text and message.conversation == topic
    )


PLACES = (
    Place(
        name="telegram", fake=FakeTelegram, settings=telegram_support.telegram_settings,
        daemon=_telegram_daemon, ask=_telegram_ask, shown=_telegram_shown,
    ),
    Place(
        name="slack", fake=FakeSlack, settings=slack_support.slack_settings,
        daemon=slack_support.slack_daemon, ask=_slack_ask, shown=_slack_shown,
    ),
    Place(
        name="feishu", fake=FakeFeishu, settings=_feishu_settings,
        daemon=_feishu_daemon, ask=_feishu_ask, shown=_feishu_shown,
    ),
    Place(
        name="dingtalk", fake=FakeDingTalk, settings=dingtalk_support.dingtalk_settings,
        daemon=_dingtalk_daemon, ask=_dingtalk_ask, shown=_dingtalk_shown,
    ),
)  # fmt: skip
