"""The Feishu/Lark channel: lark-oapi's long connection, or HTTP events (design §14).

Wiring (design §17.3):

- REST goes through ``api.FeishuApi`` (our ``httpx.AsyncClient`` on the daemon loop, tenant
  token fetched asynchronously and refreshed; see there why not the SDK's REST client).
- ``start`` fetches the token and ``bot/v3/info`` (the bot's open_id for mentions and its own
  messages): refused credentials raise ``AuthFailed`` (the channel is parked), anything else
  ``ChannelError``.
- ``mode: websocket`` (default): the endpoint is discovered here, asynchronously and bounded,
  then ``connection.LongConnection`` runs lark-oapi's ``ws.Client`` on its own thread. Its
  event handler runs on that thread: it converts the event and blocks in
  ``ThreadBridge.publish`` until the kernel journaled it; only then does it return, which makes
  the SDK ack. A refused message raises, so the SDK answers 500 and Feishu redelivers. Every
  event type reaches the handler (no per-type registration), so nothing unknown is left
  unacked. ``lark_oapi.channel.FeishuChannel`` is not used: it acks before anything is recorded.
- ``mode: webhook``: ``webhook.WebhookReceiver`` on the daemon's HTTP server, registered in
  ``__init__``; the same conversion, then ``await publish``.

Capabilities: cards hold 30 KB, so the kernel splits at 7 000 characters (``render.py``);
answers stream into CardKit cards (``streaming.py``); images up to 10 MB, files up to 30 MB.
Feishu allows about five messages a second per chat. Sends are idempotent: each carries a
``uuid`` derived from the kernel's ``dedupe_key``, and Feishu answers a repeat with the first
message (``outbound.py``), so recovery can find a placeholder a crash left unrecorded.
"""

from __future__ import annotations

import asyncio
import json
import logging

import httpx
from pydantic import SecretStr
from typing_extensions import override

from bot.config.settings import Settings
from bot.errors import AuthFailed, ChannelError, DownloadError, SendError
from bot.messages import Attachment, Reaction
from bot.ports import (
    Admission,
    BotIdentity,
    ButtonLimits,
    ChannelCapabilities,
    ChannelContext,
    Publish,
    TextUnit,
)
from channels.base import PlatformChannel, marks_choice
from channels.feishu.api import FeishuApi, Json, TenantToken, new_http
from channels.feishu.connection import LinkConfig, LongConnection
from channels.feishu.discovery import discover
from channels.feishu.inbound import AttachmentRef, BotSelf, CardPress, Decoded, Translator
from channels.feishu.logs import route_sdk_logs
from channels.feishu.outbound import Outbound
from channels.feishu.render import BUTTON_LABEL_LIMIT, QUESTION_TEXT_LIMIT, TEXT_LIMIT
from channels.feishu.webhook import WebhookReceiver
from channels.thread_bridge import ThreadBridge

logger = logging.getLogger(__name__)

QUESTION_BUTTONS = ButtonLimits(
    max_buttons=20, label_chars=BUTTON_LABEL_LIMIT, text_limit=QUESTION_TEXT_LIMIT
)
"""A card's 30 KB holds 4 000 characters (at most 16 KB in the content string) and twenty
buttons (each well under 1 KB, its label twice), with room to spare."""
FEISHU_CAPABILITIES = ChannelCapabilities(
    text_limit=TEXT_LIMIT,
    text_unit=TextUnit.CHARS,
    edits=True,
    buttons=True,
    threads=True,
    button_limits=QUESTION_BUTTONS,
    reactions=frozenset(Reaction),
    typing=False,
    max_file_bytes=30 * 1024 * 1024,
    max_image_bytes=10 * 1024 * 1024,
    progress_interval_dm_s=1.0,
    progress_interval_group_s=1.0,
    per_chat_interval_s=0.2,
    per_dm_interval_s=0.2,
    global_rate_per_s=50.0,
    idempotent_sends=True,
    deletes=True,
    listen_caveat=(
        "Feishu delivers group messages that do not @-mention the bot only to an app granted "
        "the im:message.group_msg permission (read all messages in group chats), which "
        "Switchboard cannot check; without it only @-mentions arrive and listen hears nothing else"
    ),
)
"""Feishu's send API allows 5 QPS to one user or one group and 50 QPS (1000/min) per app."""
BOT_INFO = "/open-apis/bot/v3/info"
HTTP_START_WAIT_S = 2.5
"""How long an event POSTed while the channel starts waits for it (Feishu gives up at 3 s)."""


class NotAccepted(Exception):
    """Raised on the SDK thread so the SDK answers 500 and Feishu delivers the event again."""


def _secret(value: SecretStr | None) -> str:
    return value.get_secret_value() if value is not None else ""


def _decode(translator: Translator, event: bytes | Json) -> Decoded | None:
    """The event for the kernel; one that cannot be read is logged and acknowledged, so a
    malformed event is not redelivered forever."""
    try:
        payload = json.loads(event) if isinstance(event, bytes) else event
        return translator.decode(payload)
    except (ValueError, TypeError, KeyError, AttributeError):
        logger.exception("feishu event could not be read; acknowledged and dropped")
        return None


class FeishuChannel(PlatformChannel[Outbound]):
    name = "feishu"
    capabilities = FEISHU_CAPABILITIES
    not_running = "the Feishu channel is not running"

    def __init__(
        self,
        settings: Settings,
        context: ChannelContext,
        *,
        capabilities: ChannelCapabilities | None = None,
    ) -> None:
        """No I/O. ``capabilities`` lets tests on a fake go faster."""
        super().__init__(context.health)
        block = settings.channels.feishu
        self._config = LinkConfig(
            app_id=self._required(block.app_id, "channels.feishu.app_id"),
            app_secret=self._required(block.app_secret, "channels.feishu.app_secret"),
            domain=block.domain,
            debug=settings.log.level == "DEBUG",
        )
        self._webhook = block.mode == "webhook"
        if capabilities is not None:
            self.capabilities = capabilities
        if self._webhook:
            token = self._required(block.verification_token, "channels.feishu.verification_token")
            receiver = WebhookReceiver(token, _secret(block.encrypt_key), self._on_json)
            context.routes.add_post(block.events_path, receiver.handle)
        self._http: httpx.AsyncClient | None = None
        self._api: FeishuApi | None = None
        self._translator: Translator | None = None
        self._link: LongConnection | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # ------------------------------------------------------------------ lifecycle

    def _new_api(self) -> tuple[httpx.AsyncClient, FeishuApi]:
        config = self._config
        http = new_http(config.domain)
        return http, FeishuApi(http, TenantToken(http, config.app_id, config.app_secret))

    async def probe(self) -> str:
        """Tenant token and ``bot/v3/info`` for ``switchboard check --online``."""
        http, api = self._new_api()
        try:
            me = await self._identify(api)
        finally:
            await http.aclose()
        return f"{me.name or 'bot'} ({me.open_id}), app {self._config.app_id}"

    @override
    async def _connect(self, publish: Publish) -> None:
        route_sdk_logs(debug=self._config.debug)
        self._loop = asyncio.get_running_loop()
        self._http, api = self._new_api()
        me = await self._identify(api)
        self._identity = BotIdentity(
            user_id=me.open_id, usernames=frozenset({me.name}) if me.name else frozenset()
        )
        self._api, self._out = api, Outbound(api)
        self._translator = Translator(me, self.name)
        self._open_intake()
        if self._webhook:
            self._health.connected()
        else:
            await self._open_link(self._http, publish)
        logger.info("feishu connected (%s mode)", "webhook" if self._webhook else "websocket")

    async def _open_link(self, http: httpx.AsyncClient, publish: Publish) -> None:
        config = self._config
        endpoint = await discover(http, config.app_id, config.app_secret)
        bridge = ThreadBridge(asyncio.get_running_loop(), publish, self._health)
        self._link = LongConnection(config, bridge, self._on_frame)
        await self._link.open(endpoint)

    async def _identify(self, api: FeishuApi) -> BotSelf:
        try:
            answer = await api.envelope("GET", BOT_INFO)
        except AuthFailed:
            raise
        except SendError as exc:
            raise ChannelError(f"bot/v3/info failed: {exc}") from exc
        bot = answer.get("bot") or (answer.get("data") or {}).get("bot") or {}
        open_id = str(bot.get("open_id") or "")
        if not open_id:
            raise ChannelError("bot/v3/info answered without the bot's open_id")
        return BotSelf(
            open_id=open_id, app_id=self._config.app_id, name=str(bot.get("app_name") or "")
        )

    @override
    async def _stop_receiving(self) -> None:
        if self._link is not None:
            link, self._link = self._link, None
            await link.close()

    @override
    async def _disconnect(self) -> None:
        await self._stop_receiving()
        await self._cancel_spawned()
        if self._http is not None:
            http, self._http = self._http, None
            await http.aclose()

    # ------------------------------------------------------------------ inbound

    def _on_frame(self, raw: bytes) -> object:
        """An event from the long connection, on the SDK's thread; returning acks it."""
        translator, link, loop = self._translator, self._link, self._loop
        if translator is None or link is None or loop is None:
            raise NotAccepted("the channel is not running")
        decoded = _decode(translator, raw)
        if decoded is None:
            return None
        if not self._intake_open:
            raise NotAccepted("intake is closed")
        loop.call_soon_threadsafe(self._note_thread, decoded)
        admission = link.bridge.publish(decoded.message)
        if not admission.ack:
            raise NotAccepted(f"not accepted: {admission}")
        if decoded.press is not None and admission is Admission.ACCEPTED:  # not a redelivery
            loop.call_soon_threadsafe(self._mark_choice, decoded.press)
        return None

    async def _on_json(self, payload: Json) -> tuple[bool, object]:
        """An event POSTed to the webhook: ``(acked, answer)``. During a start it waits for
        intake to open (Feishu allows 3 s); refused when it cannot be taken, so Feishu retries."""
        ready = await self._intake_ready(HTTP_START_WAIT_S)
        translator, publish = self._translator, self._publish
        if not ready or translator is None or publish is None:
            return False, None
        self._health.activity()
        decoded = _decode(translator, payload)
        if decoded is None:
            return True, None
        self._note_thread(decoded)
        admission = await publish(decoded.message)
        if not admission.ack:
            return False, None
        if decoded.press is not None and admission is Admission.ACCEPTED:  # not a redelivery
            self._mark_choice(decoded.press)
        return True, None

    def _note_thread(self, decoded: Decoded) -> None:
        if self._out is not None and decoded.thread_root is not None:
            self._out.note_thread(decoded.thread_root)

    def _mark_choice(self, press: CardPress) -> None:
        """A pressed question shows the choice at once; other buttons wait for the kernel."""
        if self._out is not None and marks_choice(press.payload):
            self._spawn(self._out.mark_choice(press), "choice")

    async def download(self, attachment: Attachment, *, max_bytes: int) -> bytes:
        ref = AttachmentRef.decode(attachment.ref)
        if self._api is None or ref is None:
            raise DownloadError(f"{attachment.name}: not downloadable here")
        if attachment.size is not None and attachment.size > max_bytes:
            raise DownloadError(f"{attachment.name} is larger than {max_bytes} bytes")
        path = f"/open-apis/im/v1/messages/{ref.message_id}/resources/{ref.key}"
        data, _headers = await self._api.download(path, {"type": ref.kind}, max_bytes)
        return data
