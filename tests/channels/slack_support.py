"""Running the real Slack adapter (and real slack-bolt) inside the real daemon against FakeSlack.

``slack_daemon`` builds the adapter here with fast pacing (a loopback fake needs no 1 s
spacing) and hands it to the daemon as an override; its health reports land in ``HealthLog``.
In HTTP mode the adapter's webhook route (from its ``RouteTable``) is served by a loopback
aiohttp server started here, exactly as the daemon's HTTP server would mount it, and the fake
is pointed at it. ``registry_daemon`` lets the daemon build everything from the settings, for
the daemon's own HTTP server and ``/readyz``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bot.app import Daemon
from bot.config.settings import Settings
from bot.kernel import Kernel
from bot.ops.routes import RouteTable
from bot.ports import (
    AgentBackend,
    Channel,
    ChannelContext,
)
from channels.slack import SLACK_CAPABILITIES, SlackChannel
from tests.bot.harness import make_settings, running
from tests.channels.health_log import HealthLog
from tests.channels.loopback_routes import serve_routes
from tests.fakes.slack_api import FakeSlack

FAST_CAPS = replace(
    SLACK_CAPABILITIES,
    per_chat_interval_s=0.0,
    per_dm_interval_s=0.0,
    progress_interval_dm_s=0.05,
    progress_interval_group_s=0.05,
)
WAIT_S = 5.0
EVENTS_PATH = "/slack/events"
BOT = "UBOT0001"


def slack_settings(
    state_dir: Path, fake: FakeSlack, *, mode: str = "socket", **sections: Any
) -> Settings:
    block: dict[str, Any] = {
        "enabled": True,
        "mode": mode,
        "bot_token": fake.ids.bot_token,
        "app_token": fake.ids.app_token,
        "signing_secret": fake.signing_secret,
        "api_base_url": fake.api_base_url,
        **sections.pop("slack", {}),
    }
    channels = {"slack": block, **sections.pop("channels", {})}
    sections.setdefault("access", {"dm_policy": "open", "admins": ["slack:UADMIN"]})
    return make_settings(state_dir, channels=channels, **sections)


# --------------------------------------------------------------------------- daemons


@dataclass
class SlackRun:
    kernel: Kernel
    channel: SlackChannel
    health: HealthLog
    fake: FakeSlack
    events_url: str = ""
    """Where the fake POSTs events in HTTP mode (the adapter's route on a loopback server)."""

    daemon: Daemon | None = None
    """The daemon (its HTTP server: the push API, design §19)."""

    async def settle(self) -> None:
        """Wait until every accepted message was routed, run and delivered (or given up)."""
        await self.kernel.conversations.lanes.wait_idle()
        await self.kernel.delivery.outbox.wait_idle()


@asynccontextmanager
async def slack_daemon(
    settings: Settings,
    fake: FakeSlack,
    agent: AgentBackend,
    *,
    others: Sequence[Channel] = (),
    wait_connected: bool = True,
    **adapter: Any,
) -> AsyncIterator[SlackRun]:
    health = HealthLog()
    routes = RouteTable()
    context = ChannelContext(routes=routes, state_dir=settings.state_dir, health=health)
    adapter.setdefault("capabilities", FAST_CAPS)
    adapter.setdefault("ping_interval_s", 0.5)
    channel = SlackChannel(settings, context, **adapter)
    async with AsyncExitStack() as stack:
        events_url = ""
        if settings.channels.slack.mode == "http":
            origin = await stack.enter_async_context(serve_routes(routes))
            events_url = f"{origin}{settings.channels.slack.events_path}"
            fake.set_http_target(events_url)
        handle = await stack.enter_async_context(running(settings, [channel, *others], agent))
        if wait_connected:
            await health.wait_for("connected")
        yield SlackRun(handle.kernel, channel, health, fake, events_url, daemon=handle.daemon)


# --------------------------------------------------------------------------- fake helpers


def texts(fake: FakeSlack, channel: str) -> list[str]:
    """What the channel shows now: the bot's messages' text (the fallback of block messages)."""
    return [str(m.get("text") or "") for m in fake.channel_messages(channel)]


def markdown_of(message: dict[str, Any]) -> str:
    return "".join(
        str(block.get("text") or "")
        for block in message.get("blocks") or ()
        if block.get("type") == "markdown"
    )


async def wait_text(fake: FakeSlack, channel: str, needle: str, within: float = WAIT_S) -> None:
    """Wait until one of the bot's messages in the channel shows ``needle``."""
    await fake.await_until(lambda: any(needle in t for t in texts(fake, channel)), within)


def mention(text: str) -> str:
    return f"<@{BOT}> {text}"
