"""``im/v1/messages``: send, reply, patch (cards), delete, get, as strict as Feishu for a bot.

- Sending needs a chat the bot is in (``add_chat`` or a pushed message), else 230002;
  ``receive_id_type=open_id`` needs a user the bot has a p2p chat with, else 230013.
- ``uuid`` (at most 50 characters, else 99992402) dedupes for an hour across create and
  reply: the same uuid answers the first message again and creates nothing, whatever the
  repeat carries; a send that failed does not use its uuid up.
- Replies to a deleted message answer 230011, to an unknown one 230001.
- PATCH only updates the bot's own ``interactive`` messages (230054 otherwise).
"""

from __future__ import annotations

from typing import Any

from tests.fakes.feishu import codes, content
from tests.fakes.feishu.records import ApiError, Upload
from tests.fakes.feishu.wire import ApiRequest, Reply, Route
from tests.fakes.feishu.world import StoredMessage, World

BOT_NOT_OWNER = 230017  # [doc] the bot did not send that message
_FILE_TYPES = frozenset({"file", "audio", "media", "sticker"})
UUID_MAX = 50  # [doc] the send and reply bodies cap ``uuid`` at 50 characters


def message_json(world: World, m: StoredMessage) -> dict[str, Any]:
    if m.sender_type == "app":
        sender = {"id": world.ids.app_id, "id_type": "app_id", "sender_type": "app"}
    else:
        sender = {"id": m.sender_id, "id_type": "open_id", "sender_type": m.sender_type}
    return {
        "message_id": m.message_id,
        "root_id": m.root_id,
        "parent_id": m.parent_id,
        "thread_id": m.thread_id,
        "msg_type": m.msg_type,
        "create_time": str(m.create_time),
        "update_time": str(m.update_time or m.create_time),
        "deleted": m.deleted,
        "updated": m.updated,
        "chat_id": m.chat_id,
        "sender": {**sender, "tenant_key": world.ids.tenant_key},
        "body": {"content": m.raw_content},
        "mentions": [],
        "upper_message_id": "",
    }


class Messages:
    def __init__(self, world: World) -> None:
        self._world = world

    def routes(self) -> list[Route]:
        one = "/open-apis/im/v1/messages/{message_id}"
        return [
            Route("POST", "/open-apis/im/v1/messages", "im.message.create", self.create),
            Route("POST", f"{one}/reply", "im.message.reply", self.reply),
            Route("PATCH", one, "im.message.patch", self.patch),
            Route("DELETE", one, "im.message.delete", self.delete),
            Route("GET", one, "im.message.get", self.get),
        ]

    # ------------------------------------------------------------------ lookups

    def target(self, message_id: str) -> StoredMessage:
        found = self._world.messages.get(message_id)
        if found is None:
            raise codes.invalid(f"message not found: {message_id}")
        if found.deleted:
            raise ApiError(codes.MESSAGE_RECALLED, "The message was withdrawn.")
        return found

    def _chat_for(self, id_type: str, receive_id: str) -> tuple[str, str]:
        world = self._world
        if id_type == "chat_id":
            if receive_id not in world.chats:
                raise ApiError(codes.BOT_NOT_IN_CHAT, "Bot/User can NOT be out of the chat.")
            return receive_id, world.chats[receive_id]
        open_id = {
            "open_id": receive_id,
            "union_id": "ou_" + receive_id.removeprefix("on_"),
            "user_id": "ou_" + receive_id,
        }.get(id_type)
        if open_id is None:
            raise codes.field_error("receive_id_type")
        chat_id = world.p2p_chats.get(open_id)
        if chat_id is None:
            raise ApiError(codes.NO_AVAILABILITY, "Bot has NO availability to this user.")
        return chat_id, "p2p"

    def _validated(self, msg_type: object, raw: object) -> tuple[dict[str, Any], str | None]:
        if not isinstance(msg_type, str) or msg_type not in content.MSG_TYPES:
            raise content.unsupported_type(msg_type)
        parsed = content.parse_content(raw)
        assert isinstance(raw, str)
        content.check_size(msg_type, raw)
        card_id = None
        if msg_type == "text":
            content.check_text(parsed)
        elif msg_type == "post":
            content.check_post(parsed)
        elif msg_type == "interactive":
            card_id = content.referenced_card_id(parsed)
            if card_id is None:
                content.check_card(parsed)
            elif card_id not in self._world.cards:
                raise codes.bad_card(f"card entity {card_id} does not exist (ErrCode: 200740)")
        elif msg_type == "image":
            self._upload(content.resource_key(parsed, "image_key"), "image")
        elif msg_type in _FILE_TYPES:
            self._upload(content.resource_key(parsed, "file_key"), "file")
        return parsed, card_id

    def _repeat(self, request: ApiRequest) -> tuple[str | None, StoredMessage | None]:
        """The send's uuid, and the message it made already if it is a repeat."""
        uuid = request.text("uuid", required=False) or None
        if uuid is not None and len(uuid) > UUID_MAX:
            raise codes.field_error("uuid")
        return uuid, self._world.remembered(uuid)

    def _upload(self, key: str, kind: str) -> Upload:
        found = self._world.uploads.get(key)
        if found is None or found.kind != kind:
            raise codes.invalid(f"invalid {kind}_key: {key}")
        return found

    def _store(self, m: StoredMessage) -> dict[str, Any]:
        world = self._world
        world.store(m)
        world.remember(m.uuid, m.message_id)
        if m.card_id is not None:
            world.cards[m.card_id].message_ids.append(m.message_id)
        for field in ("image_key", "file_key"):
            key = m.content.get(field)
            if isinstance(key, str) and key in world.uploads:
                world.resources[(m.message_id, key)] = world.uploads[key]
        return message_json(world, m)

    # ------------------------------------------------------------------ handlers

    def create(self, request: ApiRequest) -> Reply:
        id_type = request.query.get("receive_id_type")
        if not id_type:
            raise codes.field_error("receive_id_type")
        receive_id = request.text("receive_id")
        uuid, again = self._repeat(request)
        if again is not None:
            return message_json(self._world, again)
        chat_id, chat_type = self._chat_for(id_type, receive_id)
        msg_type = request.text("msg_type")
        raw = request.field("content")
        parsed, card_id = self._validated(msg_type, raw)
        message = StoredMessage(
            message_id=World.new_id("om_"),
            chat_id=chat_id,
            chat_type=chat_type,
            msg_type=msg_type,
            content=parsed,
            raw_content=str(raw),
            sender_id=self._world.ids.app_id,
            sender_type="app",
            uuid=uuid,
            card_id=card_id,
        )
        return self._store(message)

    def reply(self, request: ApiRequest) -> Reply:
        uuid, again = self._repeat(request)
        if again is not None:
            return message_json(self._world, again)
        parent = self.target(request.params["message_id"])
        if parent.chat_id not in self._world.chats:
            raise ApiError(codes.BOT_NOT_IN_CHAT, "Bot/User can NOT be out of the chat.")
        msg_type = request.text("msg_type")
        raw = request.field("content")
        parsed, card_id = self._validated(msg_type, raw)
        in_thread = request.field("reply_in_thread") is True
        thread_id = parent.thread_id or (World.new_id("omt_", 8) if in_thread else "")
        message = StoredMessage(
            message_id=World.new_id("om_"),
            chat_id=parent.chat_id,
            chat_type=parent.chat_type,
            msg_type=msg_type,
            content=parsed,
            raw_content=str(raw),
            sender_id=self._world.ids.app_id,
            sender_type="app",
            parent_id=parent.message_id,
            root_id=parent.root_id or parent.message_id,
            thread_id=thread_id,
            reply_in_thread=in_thread,
            uuid=uuid,
            card_id=card_id,
        )
        return self._store(message)

    def _own(self, message_id: str) -> StoredMessage:
        found = self.target(message_id)
        if found.sender_type != "app":
            raise ApiError(BOT_NOT_OWNER, "Bot is NOT the owner of the resource.")
        return found

    def patch(self, request: ApiRequest) -> Reply:
        found = self._own(request.params["message_id"])
        if found.msg_type != "interactive":
            raise ApiError(
                codes.UNSUPPORTED_FOR_TYPE, "This operation is not supported for this message type."
            )
        raw = request.field("content")
        parsed = content.parse_content(raw)
        assert isinstance(raw, str)
        content.check_size("interactive", raw)
        content.check_card(parsed)
        found.content, found.raw_content, found.updated = parsed, raw, True
        found.update_time = World.now_ms()
        found.versions.append(parsed)
        return {}

    def delete(self, request: ApiRequest) -> Reply:
        found = self._own(request.params["message_id"])
        found.deleted = True
        return {}

    def get(self, request: ApiRequest) -> Reply:
        found = self.target(request.params["message_id"])
        return {"items": [message_json(self._world, found)]}
