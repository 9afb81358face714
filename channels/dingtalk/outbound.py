"""Sends: the session webhook while it is valid, else the OpenAPI; files through oapi media.

- A reply (``reply_to`` set) goes to the chat's newest session webhook that is still valid,
  as ``markdown`` (``text`` for the plain rung), and ``at`` the member who asked when in a
  group. A webhook that answers "expired" is marked dead and the same message goes through
  the OpenAPI instead; one that answers "send too fast" (130101: the chat's 20 a minute) has
  sent nothing, so the message goes through the OpenAPI at once rather than after a wait.
- Everything else, and every reply once the webhook is gone (after a restart, or ~90 minutes
  later), goes through the OpenAPI with the app token: ``oToMessages/batchSend`` for a 1:1 chat
  (addressed by the member's staff id, the chat id), ``groupMessages/send`` for a group.
  ``invalidStaffIdList`` means the member is unknown (``target_not_found``),
  ``flowControlledStaffIdList`` that DingTalk throttled them (``rate_limited``).
- Files: uploaded to ``{oapi_base_url}/media/upload``, then sent as ``sampleFile`` or
  ``sampleImageMsg`` (session webhooks cannot carry files), the caption after it.

A message ``private_to`` one member is sent like any other: a robot's messages in a group
(session webhook, ``groupMessages/send``) reach every member, and the card APIs' per-member
visibility needs a card template with the member's data bound in. Buttons are not shown
(``buttons=False``): the kernel offers the choices in the text instead.

DingTalk returns no message id for a session-webhook send; the adapter makes one up, which is
only ever used as a reference the kernel cannot edit (edits exist for AI cards only). With a
card template, a progress placeholder is an AI card (``cards.py``) that edits stream into.
"""

from __future__ import annotations

import logging
import uuid
from pathlib import PurePath

from bot.delivery.files import read_outbound
from bot.errors import MessageGone, RateLimited, SendError, TargetNotFound
from bot.messages import (
    ChatType,
    Destination,
    OutboundFile,
    OutboundKind,
    OutboundText,
    ReactionMark,
    RenderMode,
    SentRef,
    TextEdit,
)
from channels.dingtalk.api import Oapi, OpenApi, dumps, post_session
from channels.dingtalk.cards import Cards, card_id
from channels.dingtalk.errors import PER_MINUTE_S, ChatThrottled, Json, SessionExpired
from channels.dingtalk.render import dingtalk_markdown, title_of
from channels.dingtalk.sessions import SessionBook

logger = logging.getLogger(__name__)

IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".gif", ".bmp"})


def _session_body(message: OutboundText, asker: str | None) -> Json:
    """DingTalk shows an ``at`` only where the text names the user (``@<userId>``), which it
    then replaces with the member's name; so the mention closes the reply."""
    mention = f"@{asker}" if asker is not None else ""
    if message.render is RenderMode.PLAIN:
        content = f"{message.text} {mention}".rstrip()
        body: Json = {"msgtype": "text", "text": {"content": content}}
    else:
        text = dingtalk_markdown(message.text) + (f"\n\n{mention}" if mention else "")
        body = {"msgtype": "markdown", "markdown": {"title": title_of(message.text), "text": text}}
    if asker is not None:
        body["at"] = {"atUserIds": [asker], "isAtAll": False}
    return body


def _template(message: OutboundText) -> tuple[str, Json]:
    if message.render is RenderMode.PLAIN:
        return "sampleText", {"content": message.text}
    return "sampleMarkdown", {
        "title": title_of(message.text),
        "text": dingtalk_markdown(message.text),
    }


def edit_without_card(edit: TextEdit) -> None:
    """DingTalk cannot edit a plain message: a final edit is sent anew, any other is moot."""
    if edit.kind is OutboundKind.FINAL:
        raise MessageGone(f"dingtalk cannot edit {edit.message_id}; sent anew")


class Outbound:
    def __init__(
        self, api: OpenApi, oapi: Oapi, book: SessionBook, robot_code: str, cards: Cards | None
    ) -> None:
        self._api = api
        self._oapi = oapi
        self._book = book
        self._robot_code = robot_code
        self._cards = cards

    async def send_text(self, message: OutboundText) -> SentRef:
        if message.kind is OutboundKind.PROGRESS and self._cards is not None:
            start = self._cards.start(message.destination, message.text, message.dedupe_key)
            return SentRef(message_ids=(await start,))
        destination = message.destination
        if message.reply_to is not None:
            webhook = await self._book.live_webhook(destination.chat_id)
            if webhook is not None:
                asker = None
                if destination.chat_type is ChatType.GROUP:
                    asker = await self._book.asker(message.reply_to)
                try:
                    await post_session(self._api.session, webhook, _session_body(message, asker))
                except SessionExpired:
                    logger.info("dingtalk session webhook expired early; using the OpenAPI")
                    await self._book.expired(webhook)
                except ChatThrottled:  # refused, so nothing was sent: the OpenAPI's own quota
                    logger.info("dingtalk session webhook throttled the chat; using the OpenAPI")
                else:
                    return SentRef(message_ids=(f"session:{uuid.uuid4().hex}",))
        key, param = _template(message)
        return await self.send_template(destination, key, param)

    async def edit_text(self, edit: TextEdit) -> None:
        """Streams into the AI card ``edit`` names (any other edit: ``edit_without_card``)."""
        track = card_id(edit.message_id)
        if track is None or self._cards is None:
            edit_without_card(edit)
            return
        final = edit.kind is not OutboundKind.PROGRESS
        await self._cards.stream(track, edit.text, final=final)

    async def react(self, mark: ReactionMark) -> None:
        """DingTalk robots cannot react."""

    async def show_typing(self, destination: Destination) -> None:
        """DingTalk has no typing indicator for robots."""

    async def send_template(self, destination: Destination, key: str, param: Json) -> SentRef:
        """One OpenAPI robot message into ``destination``."""
        body: Json = {"robotCode": self._robot_code, "msgKey": key, "msgParam": dumps(param)}
        if destination.chat_type is ChatType.GROUP:
            body["openConversationId"] = destination.chat_id
            answer = await self._api.call("POST", "/v1.0/robot/groupMessages/send", body)
        else:
            body["userIds"] = [destination.chat_id]
            answer = await self._api.call("POST", "/v1.0/robot/oToMessages/batchSend", body)
            if answer.get("invalidStaffIdList"):
                raise TargetNotFound(f"unknown staff id {destination.chat_id}")
            if answer.get("flowControlledStaffIdList"):
                raise RateLimited("flow controlled", retry_after=PER_MINUTE_S)
        reference = str(answer.get("processQueryKey") or uuid.uuid4().hex)
        return SentRef(message_ids=(reference,))

    async def send_file(self, file: OutboundFile) -> SentRef:
        data = await read_outbound(file)
        image = file.is_image and PurePath(file.name).suffix.lower() in IMAGE_SUFFIXES
        media_id = await self._oapi.upload("image" if image else "file", file.name, data)
        if image:
            sent = await self.send_template(
                file.destination, "sampleImageMsg", {"photoURL": media_id}
            )
        else:
            suffix = PurePath(file.name).suffix.lstrip(".").lower() or "file"
            param = {"mediaId": media_id, "fileName": file.name, "fileType": suffix}
            sent = await self.send_template(file.destination, "sampleFile", param)
        if not file.caption:
            return sent
        caption = OutboundText(
            destination=file.destination, text=file.caption, kind=OutboundKind.FINAL
        )
        try:
            extra = await self.send_text(caption)
        except SendError as exc:  # the file arrived; a lost caption is not worth a resend
            logger.warning("dingtalk caption not sent: %s", exc)
            return sent
        return SentRef(message_ids=(*sent.message_ids, *extra.message_ids))
