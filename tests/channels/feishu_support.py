"""Running the real Feishu adapter (and lark-oapi's real ``ws.Client``) inside the real daemon
against FakeFeishu.

``feishu_daemon`` builds the adapter with fast pacing (a loopback fake needs no spacing) and
hands it to the daemon as an override; its health reports land in ``HealthLog``. In webhook
mode the adapter's route is served by a loopback aiohttp server started here, exactly as the
daemon's HTTP server would mount it, and ``FeishuRun.send`` POSTs events there (encrypted and
signed); in websocket mode it pushes them over the long connection.
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
from bot.ports import AgentBackend, Channel, ChannelContext
from channels.feishu import FEISHU_CAPABILITIES, FeishuChannel
from tests.bot.harness import make_settings, running
from tests.channels.health_log import HealthLog
from tests.channels.loopback_routes import serve_routes
from tests.fakes.feishu import Message
from tests.fakes.feishu_api import FakeFeishu

FAST_CAPS = replace(
    FEISHU_CAPABILITIES,
    global_rate_per_s=0.0,
    per_chat_interval_s=0.0,
    per_dm_interval_s=0.0,
    progress_interval_dm_s=0.05,
    progress_interval_group_s=0.05,
)
WAIT_S = 10.0
EVENTS_PATH = "/feishu/events"
DM = "oc_dm1"
GROUP = "oc_group1"
USER = "ou_u1"


def feishu_settings(
    state_dir: Path, fake: FakeFeishu, *, mode: str = "websocket", **sections: Any
) -> Settings:
    block: dict[str, Any] = {
        "enabled": True,
        "mode": mode,
        "app_id": fake.app_id,
        "app_secret": fake.app_secret,
        "domain": fake.origin,
        "verification_token": fake.verification_token,
        "encrypt_key": fake.encrypt_key,
        **sections.pop("feishu", {}),
    }
    channels = {"feishu": block, **sections.pop("channels", {})}
    sections.setdefault("access", {"dm_policy": "open", "admins": ["feishu:ou_admin"]})
    return make_settings(state_dir, channels=channels, **sections)


@dataclass
class FeishuRun:
    kernel: Kernel
    channel: FeishuChannel
    health: HealthLog
    fake: FakeFeishu
    events_url: str = ""
    """Where events are POSTed in webhook mode (the adapter's route on a loopback server)."""

    daemon: Daemon | None = None
    """The daemon (its HTTP server: the push API, design §19)."""

    async def send(self, text: str | None = None, **fields: Any) -> str:
        """A user's message, over the long connection or the webhook; its message_id."""
        if not self.events_url:
            return self.fake.push_message(text, **fields)
        payload = self.fake.message_payload(text, **fields)
        await self.post(payload)
        return str(payload["event"]["message"]["message_id"])

    async def press(self, **fields: Any) -> None:
        """A press on a card button (``card_action_payload``'s arguments)."""
        if not self.events_url:
            self.fake.push_card_action(**fields)
            return
        await self.post(self.fake.card_action_payload(**fields))

    async def post(self, payload: dict[str, Any]) -> None:
        status, answer = await self.fake.apost_event(self.events_url, payload, encrypt=True)
        assert status == 200, (status, answer)

    async def settle(self) -> None:
        """Wait until every accepted message was routed, run and delivered (or given up)."""
        await self.kernel.conversations.lanes.wait_idle()
        await self.kernel.delivery.outbox.wait_idle()


def build_channel(
    settings: Settings, health: HealthLog, routes: RouteTable | None = None, **adapter: Any
) -> FeishuChannel:
    context = ChannelContext(
        routes=routes or RouteTable(), state_dir=settings.state_dir, health=health
    )
    adapter.setdefault("capabilities", FAST_CAPS)
    return FeishuChannel(settings, context, **adapter)


@asynccontextmanager
async def feishu_daemon(
    settings: Settings,
    fake: FakeFeishu,
    agent: AgentBackend,
    *,
    others: Sequence[Channel] = (),
    wait_connected: bool = True,
    **adapter: Any,
) -> AsyncIterator[FeishuRun]:
    health = HealthLog()
    routes = RouteTable()
    channel = build_channel(settings, health, routes, **adapter)
    async with AsyncExitStack() as stack:
        events_url = ""
        if settings.channels.feishu.mode == "webhook":
            origin = await stack.enter_async_context(serve_routes(routes))
            events_url = f"{origin}{settings.channels.feishu.events_path}"
        handle = await stack.enter_async_context(running(settings, [channel, *others], agent))
        if wait_connected:
            await health.wait_for("connected", within=WAIT_S)
        yield FeishuRun(handle.kernel, channel, health, fake, events_url, daemon=handle.daemon)


# --------------------------------------------------------------------------- fake helpers


def shown_text(fake: FakeFeishu, message: Message) -> str:
    """What a bot message shows now: card markdown (CardKit cards included), post or text."""
    content = message.content
    if message.card_id is not None and content.get("type") == "card":
        return "".join(fake.card(message.card_id).elements.values())
    if message.msg_type == "interactive":
        elements = (content.get("body") or {}).get("elements") or []
        return "\n".join(_element_text(e) for e in elements if isinstance(e, dict)).strip()
    if message.msg_type == "post":
        nodes = [n for body in content.values() for p in body["content"] for n in p]
        return "".join(str(n.get("text") or "") for n in nodes)
    return str(content.get("text") or content.get("image_key") or content.get("file_key") or "")


def _element_text(element: dict[str, Any]) -> str:
    if element.get("tag") == "markdown":
        return str(element.get("content") or "")
    text = element.get("text")
    return str(text.get("content") or "") if isinstance(text, dict) else ""


def texts(fake: FakeFeishu, chat_id: str | None = None) -> list[str]:
    return [shown_text(fake, m) for m in fake.sent_messages(chat_id)]


async def wait_text(
    fake: FakeFeishu, chat_id: str | None, needle: str, within: float = WAIT_S
) -> None:
    """Wait until one of the bot's messages in the chat shows ``needle``."""
    await fake.await_until(lambda: any(needle in t for t in texts(fake, chat_id)), within)


def at_bot(fake: FakeFeishu, text: str) -> dict[str, Any]:
    """``push_message`` fields for a group message that @-mentions the bot."""
    return {
        "text": f"@_user_1 {text}",
        "chat_id": GROUP,
        "chat_type": "group",
        "mentions": [fake.bot_mention("@_user_1")],
    }
