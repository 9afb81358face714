"""``ephemeral/v1/send``: a card in a group that only one member sees ("only visible to you").

As Feishu documents it: the bot must be in the chat (230002 otherwise), the chat must be an
ordinary group — not a p2p chat, not a topic group — the member is named by ``open_id``,
``user_id`` or ``email`` (one is required), ``msg_type`` is ``interactive`` and ``card`` is
card JSON (an object, not a string). The answer's ``message_id`` names no message the bot can
patch or recall through ``im/v1/messages``.
"""

from __future__ import annotations

from tests.fakes.feishu import codes, content
from tests.fakes.feishu.records import ApiError, Ephemeral
from tests.fakes.feishu.wire import ApiRequest, Reply, Route
from tests.fakes.feishu.world import World

NOT_AN_ORDINARY_GROUP = 232017  # [chosen] ephemeral cards are for ordinary groups only


class Ephemerals:
    def __init__(self, world: World) -> None:
        self._world = world

    def routes(self) -> list[Route]:
        return [Route("POST", "/open-apis/ephemeral/v1/send", "ephemeral.send", self.send)]

    def send(self, request: ApiRequest) -> Reply:
        chat_id = request.text("chat_id")
        member = next(
            (request.text(f) for f in ("open_id", "user_id", "email") if request.field(f)), None
        )
        if member is None:
            raise codes.field_error("open_id")
        if request.text("msg_type") != "interactive":
            raise codes.field_error("msg_type")
        card = request.field("card")
        if not isinstance(card, dict):
            raise codes.field_error("card")
        chat_type = self._world.chats.get(chat_id)
        if chat_type is None:
            raise ApiError(codes.BOT_NOT_IN_CHAT, "Bot/User can NOT be out of the chat.")
        if chat_type != "group":
            raise ApiError(NOT_AN_ORDINARY_GROUP, f"ephemeral cards are not for {chat_type} chats")
        content.check_card(card)
        shown = Ephemeral(
            message_id=World.new_id("om_"), chat_id=chat_id, open_id=member, card=card
        )
        self._world.ephemerals.append(shown)
        return {"message_id": shown.message_id}
