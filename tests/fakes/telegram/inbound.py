"""Builders for the updates a test pushes: messages (text, media, replies, topics), their
edits and button presses, shaped like the real Bot API's JSON so python-telegram-bot parses
them as it would."""

from __future__ import annotations

import copy
import mimetypes
import time
from dataclasses import dataclass
from typing import Any

from tests.fakes.telegram.world import Json, World, without_reply

_PHOTO_SIDES = (90, 320, 800, 1280)


@dataclass(frozen=True, slots=True, kw_only=True)
class PushedMessage:
    text: str | None
    chat_id: int
    chat_type: str
    user_id: int
    first_name: str
    username: str | None
    message_id: int | None
    message_thread_id: int | None
    is_forum: bool
    reply_to_message_id: int | None
    entities: list[dict[str, Any]] | None
    caption: str | None
    photo_file_ids: list[str] | None
    document_file_id: str | None
    document_name: str | None
    voice_file_id: str | None


def user_json(user_id: int, first_name: str, username: str | None) -> Json:
    user: Json = {"id": user_id, "is_bot": False, "first_name": first_name}
    if username:
        user["username"] = username
    return user


def chat_json(spec: PushedMessage) -> Json:
    chat: Json = {"id": spec.chat_id, "type": spec.chat_type}
    if spec.chat_type == "private":
        chat["first_name"] = spec.first_name
        if spec.username:
            chat["username"] = spec.username
    else:
        chat["title"] = f"Chat {spec.chat_id}"
    if spec.is_forum:
        chat["is_forum"] = True
    return chat


def message_update(world: World, spec: PushedMessage) -> Json:
    """Registers the chat and user, stores the message, and returns its (unqueued) update."""
    chat, user = chat_json(spec), user_json(spec.user_id, spec.first_name, spec.username)
    world.register_chat(chat, user, spec.message_thread_id)
    message: Json = {
        "message_id": spec.message_id or world.next_message_id(spec.chat_id),
        "date": int(time.time()),
        "chat": chat,
        "from": user,
    }
    if spec.message_thread_id is not None:
        message["message_thread_id"] = spec.message_thread_id
        message["is_topic_message"] = spec.is_forum
    if spec.reply_to_message_id is not None:
        message["reply_to_message"] = _reply_target(world, spec)
    message.update(_content(world, spec))
    world.store_message(message, by_bot=False)
    return {"message": message}


def _reply_target(world: World, spec: PushedMessage) -> Json:
    assert spec.reply_to_message_id is not None
    target = world.message(spec.chat_id, spec.reply_to_message_id)
    if target is None:
        raise ValueError(
            f"push_message: message {spec.reply_to_message_id} is unknown in chat {spec.chat_id}"
        )
    return without_reply(target.message)


def _content(world: World, spec: PushedMessage) -> Json:
    content: Json = {}
    if spec.text is not None:
        content["text"] = spec.text
        if spec.entities:
            content["entities"] = spec.entities
    if spec.caption is not None:
        content["caption"] = spec.caption
        if spec.entities and spec.text is None:
            content["caption_entities"] = spec.entities
    if spec.photo_file_ids:
        content["photo"] = [
            _file_json(world, file_id, width=side, height=side)
            for file_id, side in zip(spec.photo_file_ids, _PHOTO_SIDES, strict=False)
        ]
    if spec.document_file_id is not None:
        name = spec.document_name or "file.bin"
        mime = mimetypes.guess_type(name)[0] or "application/octet-stream"
        content["document"] = _file_json(
            world, spec.document_file_id, file_name=name, mime_type=mime
        )
    if spec.voice_file_id is not None:
        content["voice"] = _file_json(world, spec.voice_file_id, duration=1, mime_type="audio/ogg")
    return content


def _file_json(world: World, file_id: str, **extra: Any) -> Json:
    stored = world.files.get(file_id)
    unique = stored.unique_id if stored else f"AgADunknown-{file_id}"
    described: Json = {"file_id": file_id, "file_unique_id": unique, **extra}
    if stored is not None:
        described["file_size"] = len(stored.content)
    return described


def callback_update(  # noqa: PLR0913 - the button press fields
    world: World, *, data: str, chat_id: int, message_id: int, user_id: int, first_name: str
) -> Json:
    """A button press on one of the bot's messages (or an inaccessible one if unknown)."""
    chat = world.chats.get(chat_id)
    if chat is None:
        raise ValueError(f"push_callback_query: chat {chat_id} was never pushed")
    user = world.users.get(user_id) or user_json(user_id, first_name, None)
    world.users[user_id] = user
    stored = world.message(chat_id, message_id)
    message = (
        without_reply(stored.message)
        if stored is not None
        else {"chat": chat, "message_id": message_id, "date": 0}
    )
    query_id = world.new_callback_query_id()
    world.callback_queries[query_id] = False
    query = {"id": query_id, "from": user, "chat_instance": f"ci{chat_id}", "data": data}
    return {"callback_query": {**query, "message": message}}


def edited_update(
    world: World, *, chat_id: int, message_id: int, text: str, entities: list[Json] | None
) -> Json:
    """An ``edited_message`` update as Telegram sends it: the whole message with its new
    text (or caption) and ``edit_date``; the stored message changes too."""
    stored = world.message(chat_id, message_id)
    if stored is None or stored.by_bot:
        raise ValueError(f"push_edit: no user message {message_id} in chat {chat_id}")
    message: Json = copy.deepcopy(stored.message)
    key = "caption" if "caption" in message else "text"
    message[key] = text
    message.pop(f"{key}_entities" if key == "caption" else "entities", None)
    if entities:
        message["caption_entities" if key == "caption" else "entities"] = entities
    message["edit_date"] = max(int(time.time()), int(message["date"]) + 1)
    world.store_message(message, by_bot=False)
    return {"edited_message": message}
