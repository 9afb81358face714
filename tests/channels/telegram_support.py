"""Running the real Telegram adapter inside the real daemon against ``FakeTelegram``.

Two ways in:

- ``telegram_daemon``: the adapter is built here (with fast pacing, which a loopback fake does
  not need) and handed to the daemon as an override. Its health reports land in ``HealthLog``.
- ``registry_daemon``: the daemon builds the adapter itself from the settings, through the
  registry, with the daemon's route table and health hub — production pacing included. Used
  where the webhook route or ``/readyz`` must be the daemon's own.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bot.app import Daemon
from bot.commands import default_registry
from bot.config.settings import Settings
from bot.kernel import Kernel
from bot.ops.routes import RouteTable
from bot.ports import (
    AgentBackend,
    ChannelContext,
)
from channels.telegram import TELEGRAM_CAPABILITIES, TelegramChannel
from tests.bot.harness import make_settings, running
from tests.channels.health_log import HealthLog
from tests.fakes.common.waiting import eventually
from tests.fakes.telegram_api import Call, FakeTelegram

FAST_CAPS = replace(
    TELEGRAM_CAPABILITIES,
    per_chat_interval_s=0.0,
    per_dm_interval_s=0.0,
    global_rate_per_s=0.0,
    progress_interval_dm_s=0.05,
    progress_interval_group_s=0.05,
)
WAIT_S = 5.0
PRESS_WINDOW_S = 0.5
"""A button press nobody answers privately is answered empty this soon (production: 8 s)."""


def telegram_settings(state_dir: Path, fake: FakeTelegram, **sections: Any) -> Settings:
    block: dict[str, Any] = {
        "enabled": True,
        "token": fake.token,
        "api_base_url": fake.api_origin,
        **sections.pop("telegram", {}),
    }
    sections.setdefault("access", {"dm_policy": "open", "admins": ["telegram:1"]})
    return make_settings(state_dir, channels={"telegram": block}, **sections)


# --------------------------------------------------------------------------- daemons


@dataclass
class TelegramRun:
    kernel: Kernel
    channel: TelegramChannel
    health: HealthLog
    daemon: Daemon

    async def settle(self) -> None:
        """Wait until every accepted message was routed, run and delivered (or given up)."""
        await self.kernel.conversations.lanes.wait_idle()
        await self.kernel.delivery.outbox.wait_idle()


@asynccontextmanager
async def telegram_daemon(
    settings: Settings, agent: AgentBackend, **adapter: Any
) -> AsyncIterator[TelegramRun]:
    health = HealthLog()
    context = ChannelContext(
        routes=RouteTable(),
        state_dir=settings.state_dir,
        health=health,
        commands=default_registry().menu(),
    )
    adapter.setdefault("capabilities", FAST_CAPS)
    adapter.setdefault("poll_timeout_s", 1)
    adapter.setdefault("press_window_s", PRESS_WINDOW_S)
    channel = TelegramChannel(settings, context, **adapter)
    async with running(settings, [channel], agent) as handle:
        await health.wait_for("connected")
        yield TelegramRun(handle.kernel, channel, health, handle.daemon)


def free_port() -> int:
    """A loopback port for a server whose URL must be known before it starts (webhooks)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


# --------------------------------------------------------------------------- fake helpers


def mention(text: str, needle: str = "@fake_bot") -> list[dict[str, Any]]:
    """The ``mention`` entity Telegram would attach for ``needle`` in ``text``."""
    offset = len(text[: text.index(needle)].encode("utf-16-le")) // 2
    return [{"type": "mention", "offset": offset, "length": len(needle)}]


def texts(fake: FakeTelegram, chat_id: int) -> list[str]:
    """What the chat shows now: the bot's messages with their latest text."""
    return [str(m.get("text") or m.get("caption") or "") for m in fake.chat_messages(chat_id)]


async def wait_text(fake: FakeTelegram, chat_id: int, needle: str, within: float = WAIT_S) -> None:
    """Wait until one of the bot's messages in the chat shows ``needle``."""

    async def shown() -> bool:
        return any(needle in text for text in texts(fake, chat_id))

    await eventually(shown, within)


def text_calls(fake: FakeTelegram, *, rich: bool = False) -> list[Call]:
    """sendMessage and editMessageText calls in order; ``rich`` keeps those with entities."""
    return [
        call
        for call in fake.calls()
        if call.method in ("sendMessage", "editMessageText")
        and (not rich or "entities" in call.params)
    ]
