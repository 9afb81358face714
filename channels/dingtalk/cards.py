"""AI-card streaming (design §8 Streaming, §17.4), when ``card_template_id`` is set.

The kernel's streamed answer maps onto DingTalk's AI card like this:

- the placeholder (``send_text`` with ``kind=PROGRESS``) creates a card instance of the
  template (``POST /v1.0/card/instances``, flow status 1 "processing", ``callbackType``
  STREAM) and delivers it into the chat (``POST /v1.0/card/instances/deliver``: space
  ``IM_ROBOT.<staffId>`` for a 1:1 chat, ``IM_GROUP.<openConversationId>`` for a group);
- progress edits stream the text so far (``PUT /v1.0/card/streaming``, full content each
  time, so a dropped update loses nothing);
- any other edit — the final answer, a "stopped" or error text, recovery's "interrupted"
  note — streams its text with ``isFinalize`` and sets flow status 3 (finished)
  (``PUT /v1.0/card/instances``). A card is never left "processing".

The message id the kernel records is ``card:<outTrackId>``, and the ``outTrackId`` is chosen
by us, derived from the outbox row's key when there is one: a later process can finish a card
it did not start from that id alone, and a placeholder resent after a crash reuses its card.
"""

from __future__ import annotations

import hashlib
import uuid

from bot.errors import InvalidRequest
from bot.messages import ChatType, Destination
from channels.dingtalk.api import OpenApi
from channels.dingtalk.render import dingtalk_markdown

CARD_PREFIX = "card:"
PROCESSING, FINISHED = "1", "3"


def out_track_id(dedupe_key: str) -> str:
    if not dedupe_key:
        return uuid.uuid4().hex
    return hashlib.sha256(dedupe_key.encode()).hexdigest()[:40]


def card_id(message_id: str) -> str | None:
    """The ``outTrackId`` behind a message id this adapter made for a card, else ``None``."""
    return message_id[len(CARD_PREFIX) :] if message_id.startswith(CARD_PREFIX) else None


class Cards:
    def __init__(self, api: OpenApi, robot_code: str, template_id: str, content_key: str) -> None:
        self._api = api
        self._robot_code = robot_code
        self._template_id = template_id
        self._key = content_key

    async def start(self, destination: Destination, text: str, dedupe_key: str) -> str:
        """Create and deliver a card showing ``text``; returns its message id."""
        track = out_track_id(dedupe_key)
        try:
            await self._api.call(
                "POST",
                "/v1.0/card/instances",
                {
                    "cardTemplateId": self._template_id,
                    "outTrackId": track,
                    "cardData": {"cardParamMap": {self._key: "", "flowStatus": PROCESSING}},
                    "callbackType": "STREAM",
                    "imGroupOpenSpaceModel": {"supportForward": True},
                    "imRobotOpenSpaceModel": {"supportForward": True},
                },
            )
        except InvalidRequest as refused:
            if not dedupe_key:
                raise
            # A retry of a send whose card was created before its delivery failed: the
            # outTrackId is taken, so deliver that card (delivering twice is harmless).
            await self._deliver(destination, track, refused)
            return f"{CARD_PREFIX}{track}"
        await self._deliver(destination, track, None)
        if text:
            await self.stream(track, text, final=False)
        return f"{CARD_PREFIX}{track}"

    async def _deliver(
        self, destination: Destination, track: str, create_error: InvalidRequest | None
    ) -> None:
        body = self._delivery(destination, track)
        try:
            await self._api.call("POST", "/v1.0/card/instances/deliver", body)
        except InvalidRequest:
            if create_error is not None:
                raise create_error from None  # no such card after all: the create's refusal
            raise

    def _delivery(self, destination: Destination, track: str) -> dict[str, object]:
        body: dict[str, object] = {"outTrackId": track, "userIdType": 1}
        if destination.chat_type is ChatType.GROUP:
            body["openSpaceId"] = f"dtv1.card//IM_GROUP.{destination.chat_id}"
            body["imGroupOpenDeliverModel"] = {"robotCode": self._robot_code}
        else:
            body["openSpaceId"] = f"dtv1.card//IM_ROBOT.{destination.chat_id}"
            body["imRobotOpenDeliverModel"] = {
                "spaceType": "IM_ROBOT",
                "robotCode": self._robot_code,
            }
        return body

    async def stream(self, track: str, text: str, *, final: bool) -> None:
        """Show ``text`` (the whole content so far); ``final`` closes the card."""
        content = dingtalk_markdown(text)
        await self._api.call(
            "PUT",
            "/v1.0/card/streaming",
            {
                "outTrackId": track,
                "guid": uuid.uuid4().hex,
                "key": self._key,
                "content": content,
                "isFull": True,
                "isFinalize": final,
                "isError": False,
            },
        )
        if final:
            await self._api.call(
                "PUT",
                "/v1.0/card/instances",
                {
                    "outTrackId": track,
                    "cardData": {"cardParamMap": {self._key: content, "flowStatus": FINISHED}},
                },
            )
