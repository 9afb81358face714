"""Running the real DingTalk adapter inside the real daemon against FakeDingTalk.

``dingtalk_daemon`` builds the adapter with fast pacing (a loopback fake needs no spacing) and
hands it to the daemon as an override; its health reports land in ``HealthLog``. Settings
point every URL at the fake through config alone (``api_base_url``; ``oapi_base_url``
defaults to the same origin for a non-public base): no environment variable is involved.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bot.app import Daemon
from bot.config.settings import Settings
from bot.kernel import Kernel
from bot.ops.routes import RouteTable
from bot.ports import AgentBackend, Channel, ChannelContext
from channels.dingtalk import DINGTALK_CAPABILITIES, DingTalkChannel
from tests.bot.harness import make_settings, running
from tests.channels.health_log import HealthLog
from tests.fakes.dingtalk_api import FakeDingTalk

FAST_CAPS = replace(
    DINGTALK_CAPABILITIES,
    per_chat_interval_s=0.0,
    per_dm_interval_s=0.0,
    progress_interval_dm_s=0.05,
    progress_interval_group_s=0.05,
)
WAIT_S = 10.0
ALICE = "staff_alice"
BOB = "staff_bob"
GROUP = "cidGroup1"
TEMPLATE = "tpl-ai-card.schema"


def dingtalk_settings(state_dir: Path, fake: FakeDingTalk, **sections: Any) -> Settings:
    block: dict[str, Any] = {
        "enabled": True,
        "client_id": fake.client_id,
        "client_secret": fake.client_secret,
        "api_base_url": fake.origin,
        **sections.pop("dingtalk", {}),
    }
    channels = {"dingtalk": block, **sections.pop("channels", {})}
    sections.setdefault("access", {"dm_policy": "open", "admins": [f"dingtalk:{ALICE}"]})
    return make_settings(state_dir, channels=channels, **sections)


@dataclass
class DingTalkRun:
    kernel: Kernel
    channel: DingTalkChannel
    health: HealthLog
    fake: FakeDingTalk

    daemon: Daemon | None = None
    """The daemon (its HTTP server: the push API, design §19)."""

    async def settle(self) -> None:
        """Wait until every accepted message was routed, run and delivered (or given up)."""
        await self.kernel.conversations.lanes.wait_idle()
        await self.kernel.delivery.outbox.wait_idle()


def build_channel(settings: Settings, health: HealthLog, **adapter: Any) -> DingTalkChannel:
    context = ChannelContext(routes=RouteTable(), state_dir=settings.state_dir, health=health)
    adapter.setdefault("capabilities", FAST_CAPS)
    return DingTalkChannel(settings, context, **adapter)


@asynccontextmanager
async def dingtalk_daemon(
    settings: Settings,
    fake: FakeDingTalk,
    agent: AgentBackend,
    *,
    others: Sequence[Channel] = (),
    wait_connected: bool = True,
    **adapter: Any,
) -> AsyncIterator[DingTalkRun]:
    health = HealthLog()
    channel = build_channel(settings, health, **adapter)
    async with running(settings, [channel, *others], agent) as handle:
        if wait_connected:
            await health.wait_for("connected", within=WAIT_S)
        yield DingTalkRun(handle.kernel, channel, health, fake, daemon=handle.daemon)


def texts(fake: FakeDingTalk, conversation: str | None = None) -> list[str]:
    return [m.text for m in fake.sent_messages(conversation)]


async def wait_text(
    fake: FakeDingTalk, conversation: str | None, needle: str, within: float = WAIT_S
) -> None:
    """Wait until one of the bot's messages in the conversation shows ``needle``."""
    await fake.await_until(lambda: any(needle in t for t in texts(fake, conversation)), within)
