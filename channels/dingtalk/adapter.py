"""The DingTalk channel: stream mode in, session webhooks / OpenAPI / AI cards out (design §14).

Wiring (design §17.4):

- ``start`` opens a durable session book (``sessions.py``), then ``connection.StreamLink``:
  ``connections/open`` on ``api_base_url`` (refused credentials → ``AuthFailed``, the channel
  is parked), the websocket, and a reconnect loop owned by this adapter; the SDK's
  ``DingTalkStreamClient.start`` is never run.
- A chatbot callback is decoded (``inbound.py``), its session webhook recorded, and the message
  published; the callback is acked only when ``publish`` admitted it (``handler.py``).
- Sends: ``outbound.py`` (session webhook, else OpenAPI; files through oapi media); with
  ``card_template_id`` the placeholder is an AI card that progress edits stream into and any
  other edit finishes (``cards.py``). Without a template DingTalk cannot edit, so the
  capabilities say ``edits=False`` and the kernel sends each answer whole.
- Every URL comes from config: ``api_base_url`` (gateway and OpenAPI) and ``oapi_base_url``
  (``/gettoken``, ``/media/upload``); ``DINGTALK_OPENAPI_ENDPOINT`` is never read.

Capabilities: text is split at 5 000 UTF-8 bytes (``render.py``); files up to 20 MB, images
up to 10 MB (oapi media limits); robots may post about 20 messages a minute into one group.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import aiohttp
from typing_extensions import override

from bot.config.settings import Settings
from bot.errors import AuthFailed, DownloadError, SendError
from bot.messages import Attachment, TextEdit
from bot.ports import ChannelCapabilities, ChannelContext, Publish, TextUnit
from channels.base import PlatformChannel
from channels.dingtalk.api import Oapi, OpenApi, download, new_session
from channels.dingtalk.cards import Cards, card_id
from channels.dingtalk.connection import StreamConfig, StreamLink
from channels.dingtalk.handler import TOPIC, ChatbotCallbacks
from channels.dingtalk.inbound import decode
from channels.dingtalk.logs import route_sdk_logs
from channels.dingtalk.outbound import Outbound, edit_without_card
from channels.dingtalk.render import TEXT_LIMIT
from channels.dingtalk.sessions import SessionBook

logger = logging.getLogger(__name__)

DINGTALK_CAPABILITIES = ChannelCapabilities(
    text_limit=TEXT_LIMIT,
    text_unit=TextUnit.UTF8_BYTES,
    edits=False,
    buttons=False,
    threads=False,
    typing=False,
    max_file_bytes=20 * 1024 * 1024,
    max_image_bytes=10 * 1024 * 1024,
    progress_interval_dm_s=1.0,
    progress_interval_group_s=1.5,
    per_chat_interval_s=3.0,
    per_dm_interval_s=0.2,
    listen_caveat=(
        "DingTalk delivers a group message to a robot only when it @-mentions the robot, "
        "so listen hears no other group message"
    ),
)
SESSIONS_FILE = "dingtalk-sessions.sqlite3"


class DingTalkChannel(PlatformChannel[Outbound]):
    name = "dingtalk"
    capabilities = DINGTALK_CAPABILITIES
    not_running = "the DingTalk channel is not running"

    def __init__(
        self,
        settings: Settings,
        context: ChannelContext,
        *,
        capabilities: ChannelCapabilities | None = None,
    ) -> None:
        """No I/O. ``capabilities`` lets tests on a fake go faster."""
        super().__init__(context.health)
        block = settings.channels.dingtalk
        self._config = StreamConfig(
            base=block.api_base_url,
            client_id=self._required(block.client_id, "channels.dingtalk.client_id"),
            client_secret=self._required(block.client_secret, "channels.dingtalk.client_secret"),
        )
        self._oapi_base = block.oapi_origin
        self._template = block.card_template_id or ""
        self._content_key = block.card_content_key
        self._debug = settings.log.level == "DEBUG"
        self._book_path = context.state_dir / SESSIONS_FILE
        self.capabilities = replace(
            capabilities or DINGTALK_CAPABILITIES, edits=bool(self._template)
        )
        self._session: aiohttp.ClientSession | None = None
        self._api: OpenApi | None = None
        self._book: SessionBook | None = None
        self._link: StreamLink | None = None

    # ------------------------------------------------------------------ lifecycle

    def _new_api(self, session: aiohttp.ClientSession) -> OpenApi:
        config = self._config
        return OpenApi(session, config.base, config.client_id, config.client_secret)

    async def probe(self) -> str:
        """An access token for ``switchboard check --online``."""
        async with new_session() as session:
            await self._new_api(session).token.get()
        return f"app {self._config.client_id}: access token issued"

    @override
    async def _connect(self, publish: Publish) -> None:
        config = self._config
        self._session = session = new_session()
        self._api = api = self._new_api(session)
        oapi = Oapi(session, self._oapi_base, config.client_id, config.client_secret)
        self._book = book = SessionBook(self._book_path)
        await book.open()
        cards = None
        if self._template:
            cards = Cards(api, config.client_id, self._template, self._content_key)
        self._out = Outbound(api, oapi, book, config.client_id, cards)
        handlers = {TOPIC: ChatbotCallbacks(self._accept)}
        self._link = StreamLink(session, config, handlers, self._health)
        route_sdk_logs(debug=self._debug)
        self._open_intake()
        await self._link.open()
        logger.info("dingtalk connected (stream mode)")

    @override
    async def _stop_receiving(self) -> None:
        if self._link is not None:
            link, self._link = self._link, None
            await link.close()

    @override
    async def _disconnect(self) -> None:
        self._out = None  # a send from now on is transient, not a closed session's
        await self._stop_receiving()
        await self._cancel_spawned()
        if self._book is not None:
            book, self._book = self._book, None
            await book.aclose()
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    # ------------------------------------------------------------------ inbound

    async def _accept(self, data: dict[str, Any]) -> bool:
        """Record one chatbot callback; ``True`` acks it."""
        publish, book = self._publish, self._book
        if not self._intake_open or publish is None or book is None:
            return False
        try:
            decoded = decode(data, self.name)
        except (ValueError, TypeError, KeyError, AttributeError):
            logger.exception("dingtalk callback could not be read; acknowledged and dropped")
            return True
        if decoded is None:
            return True
        if decoded.session is not None:
            await book.record(decoded.message.message_id, decoded.session)
        admission = await publish(decoded.message)
        return admission.ack

    async def download(self, attachment: Attachment, *, max_bytes: int) -> bytes:
        if self._api is None:
            raise DownloadError(f"{attachment.name}: the DingTalk channel is not running")
        if attachment.size is not None and attachment.size > max_bytes:
            raise DownloadError(f"{attachment.name} is larger than {max_bytes} bytes")
        body = {"robotCode": self._config.client_id, "downloadCode": attachment.ref}
        try:
            answer = await self._api.call("POST", "/v1.0/robot/messageFiles/download", body)
        except AuthFailed:
            raise
        except SendError as exc:
            raise DownloadError(f"{attachment.name}: {exc}") from exc
        url = str(answer.get("downloadUrl") or "")
        if not url:
            raise DownloadError(f"{attachment.name}: no downloadUrl in the answer")
        return await download(self._api.session, url, max_bytes)

    # ------------------------------------------------------------------ outbound

    @override
    async def edit_text(self, edit: TextEdit) -> None:
        if card_id(edit.message_id) is None or not self._template:
            edit_without_card(edit)  # whether or not the channel runs
            return
        await super().edit_text(edit)  # recovery's card edits can come while it still starts
