"""The Bot API methods Switchboard uses, validated the way the real server validates them.

Each handler takes the decoded form fields and uploaded files and returns the ``result`` or
raises ``ApiError``. Handlers run with the fake's lock held and never block. ``getUpdates``
(a long poll) lives in the server, which owns waiting.
"""

from __future__ import annotations

import copy
import mimetypes
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from tests.fakes.telegram import validation
from tests.fakes.telegram.errors import NOT_MODIFIED, ApiError, bad_request
from tests.fakes.telegram.formatting import caption, check_text_length, message_text
from tests.fakes.telegram.media import check_upload, photo_size
from tests.fakes.telegram.text import utf16_len
from tests.fakes.telegram.world import (
    CallbackAnswer,
    Json,
    StoredFile,
    StoredMessage,
    Webhook,
    World,
)

DOWNLOAD_LIMIT = 20 * 1024 * 1024
CALLBACK_TEXT_LIMIT = 200  # answerCallbackQuery: "0-200 characters"
WEBHOOK_ACTIVE = (
    "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to "
    "delete the webhook first"
)
METHOD_NAMES = (
    "getMe", "getChat", "getUpdates", "sendMessage", "editMessageText", "editMessageReplyMarkup",
    "deleteMessage", "sendChatAction", "setMessageReaction", "answerCallbackQuery",
    "setMyCommands", "getMyCommands", "deleteMyCommands", "sendDocument", "sendPhoto",
    "getFile", "setWebhook", "deleteWebhook", "getWebhookInfo",
)  # fmt: skip
_CANONICAL = {name.lower(): name for name in METHOD_NAMES}


def canonical_method(name: str) -> str | None:
    """Bot API method names are case-insensitive; tests see the documented spelling."""
    return _CANONICAL.get(name.lower())


@dataclass(frozen=True, slots=True)
class ApiRequest:
    params: Mapping[str, str]
    files: Mapping[str, bytes] = field(default_factory=dict)
    filenames: Mapping[str, str] = field(default_factory=dict)


class BotApi:
    def __init__(self, world: World) -> None:
        self.world = world
        self._handlers: dict[str, Callable[[ApiRequest], Any]] = {
            "getMe": self.get_me,
            "getChat": self.get_chat,
            "sendMessage": self.send_message,
            "editMessageText": self.edit_message_text,
            "editMessageReplyMarkup": self.edit_message_reply_markup,
            "deleteMessage": self.delete_message,
            "sendChatAction": self.send_chat_action,
            "setMessageReaction": self.set_message_reaction,
            "answerCallbackQuery": self.answer_callback_query,
            "setMyCommands": self.set_my_commands,
            "getMyCommands": self.get_my_commands,
            "deleteMyCommands": self.delete_my_commands,
            "sendDocument": lambda request: self.send_media(request, "document"),
            "sendPhoto": lambda request: self.send_media(request, "photo"),
            "getFile": self.get_file,
            "setWebhook": self.set_webhook,
            "deleteWebhook": self.delete_webhook,
            "getWebhookInfo": self.get_webhook_info,
        }

    def call(self, method: str, request: ApiRequest) -> Any:
        return self._handlers[method](request)

    def start_poll(self, params: Mapping[str, str], offset: int) -> None:
        """The non-waiting part of getUpdates: mode check, update filter, confirmation."""
        if self.world.webhook is not None:
            raise ApiError(409, WEBHOOK_ACTIVE)
        self.world.allowed_updates = validation.allowed_updates(
            params.get("allowed_updates"), self.world.allowed_updates
        )
        self.world.confirm(offset)

    # ------------------------------------------------------------------ identity and chats

    def get_me(self, request: ApiRequest) -> Json:
        flags = ("can_join_groups", "can_read_all_group_messages", "supports_inline_queries")
        reads_all = not self.world.privacy_mode
        return {
            **self.world.bot_user, **dict.fromkeys(flags, False), "can_join_groups": True,
            "can_read_all_group_messages": reads_all,
        }  # fmt: skip

    def get_chat(self, request: ApiRequest) -> Json:
        chat = self.world.chats[self.chat_id(request.params)]
        gifts = ("unlimited_gifts", "limited_gifts", "unique_gifts", "premium_subscription",
                 "gifts_from_channels")  # fmt: skip
        extra = {"accent_color_id": 0, "max_reaction_count": 11}
        return {**chat, **extra, "accepted_gift_types": dict.fromkeys(gifts, False)}

    def chat_id(self, params: Mapping[str, str]) -> int:
        raw = params.get("chat_id", "")
        if not raw:
            raise bad_request("chat_id is empty")
        chat_id = _parse_int(raw)
        if chat_id is None:
            chat_id = next(
                (cid for cid, chat in self.world.chats.items()
                 if raw.startswith("@") and chat.get("username") == raw[1:]),
                None,
            )  # fmt: skip
        if chat_id is not None and chat_id in self.world.chats:
            return chat_id
        if chat_id is not None and chat_id in self.world.users:
            raise ApiError(403, "Forbidden: bot can't initiate conversation with a user")
        raise bad_request("chat not found")

    # ------------------------------------------------------------------ sending

    def send_message(self, request: ApiRequest) -> Json:
        params = request.params
        formatted = message_text(params)
        markup = validation.reply_markup(params.get("reply_markup"))
        if params.get("link_preview_options"):
            validation.load_json(params["link_preview_options"], "link preview options")
        chat_id = self.chat_id(params)
        thread_id, reply = self.placement(chat_id, params)
        check_text_length(formatted)
        content: Json = {"text": formatted.text}
        if formatted.entities:
            content["entities"] = list(formatted.entities)
        content.update(_inline_markup(markup))
        return self.world.post(chat_id, content, thread_id=thread_id, reply=reply)

    def send_media(self, request: ApiRequest, kind: str) -> Json:
        params = request.params
        described = caption(params)
        markup = validation.reply_markup(params.get("reply_markup"))
        chat_id = self.chat_id(params)
        thread_id, reply = self.placement(chat_id, params)
        stored, name = self.media_input(request, kind)
        content: Json = {kind: self.media_json(stored, kind, name)}
        if described is not None:
            content["caption"] = described.text
            if described.entities:
                content["caption_entities"] = list(described.entities)
        content.update(_inline_markup(markup))
        return self.world.post(chat_id, content, thread_id=thread_id, reply=reply)

    def media_input(self, request: ApiRequest, kind: str) -> tuple[StoredFile, str]:
        """The uploaded part (by field name or ``attach://``) or a known ``file_id``."""
        reference = request.params.get(kind, "")
        part = reference.removeprefix("attach://") if reference.startswith("attach://") else kind
        if part in request.files:
            data, name = request.files[part], request.filenames.get(part) or "file"
            check_upload(kind, data)
            folder, suffix = ("photos", ".jpg") if kind == "photo" else ("documents", _suffix(name))
            file_id = self.world.new_file_id(kind)
            stored = self.world.add_file(file_id, data, None, folder=folder, suffix=suffix)
            return stored, name
        if not reference:
            raise bad_request(f"there is no {kind} in the request")
        known = self.world.files.get(reference)
        if known is None:
            raise bad_request("wrong file identifier/HTTP URL specified")
        return known, known.path.rsplit("/", 1)[-1]

    def media_json(self, stored: StoredFile, kind: str, name: str) -> Any:
        base = {"file_id": stored.file_id, "file_unique_id": stored.unique_id}
        size = len(stored.content)
        if kind == "photo":
            width, height = photo_size(stored.content)
            return [{**base, "width": width, "height": height, "file_size": size}]
        mime = mimetypes.guess_type(name)[0] or "application/octet-stream"
        return {**base, "file_name": name, "mime_type": mime, "file_size": size}

    def placement(self, chat_id: int, params: Mapping[str, str]) -> tuple[int | None, Json | None]:
        """Validates ``message_thread_id`` and the reply target; a reply joins its topic."""
        thread_id: int | None = None
        if params.get("message_thread_id"):
            thread_id = _parse_int(params["message_thread_id"])
            if thread_id not in self.world.threads.get(chat_id, set()):
                raise bad_request("message thread not found")
        target = self.reply_target(chat_id, params)
        if target is None:
            return thread_id, None
        return (thread_id if thread_id is not None else target.thread_id), target.message

    def reply_target(self, chat_id: int, params: Mapping[str, str]) -> StoredMessage | None:
        if params.get("reply_parameters"):
            value = validation.load_json(params["reply_parameters"], "reply parameters")
            if not isinstance(value, dict) or not isinstance(value.get("message_id"), int):
                raise bad_request("can't parse reply parameters JSON object")
            message_id, allow = value["message_id"], bool(value.get("allow_sending_without_reply"))
            if "chat_id" in value:
                chat_id = self.chat_id({"chat_id": str(value["chat_id"])})
        elif params.get("reply_to_message_id"):
            message_id = _parse_int(params["reply_to_message_id"]) or 0
            allow = _parse_bool(params.get("allow_sending_without_reply"))
        else:
            return None
        target = self.world.message(chat_id, message_id)
        if target is None and not allow:
            raise bad_request("message to be replied not found")
        return target

    # ------------------------------------------------------------------ editing

    def edit_message_text(self, request: ApiRequest) -> Json:
        params = request.params
        if params.get("inline_message_id"):
            raise bad_request("MESSAGE_ID_INVALID")
        formatted = message_text(params)
        markup = validation.reply_markup(params.get("reply_markup"))
        stored = self.own_message(params, "edit")
        if "text" not in stored.message:
            raise bad_request("there is no text in the message to edit")
        check_text_length(formatted)
        new: Json = {"text": formatted.text, "entities": list(formatted.entities)}
        new.update(_inline_markup(markup))
        return self.apply_edit(stored, new)

    def edit_message_reply_markup(self, request: ApiRequest) -> Json:
        markup = validation.reply_markup(request.params.get("reply_markup"))
        stored = self.own_message(request.params, "edit")
        return self.apply_edit(stored, _inline_markup(markup))

    def apply_edit(self, stored: StoredMessage, new: Json) -> Json:
        """Telegram refuses an edit that changes neither content nor markup."""
        message = stored.message
        before = {key: message.get(key) or None for key in ("text", "entities", "reply_markup")}
        after = {**before, "reply_markup": None, **{k: v or None for k, v in new.items()}}
        if before == after:
            raise ApiError(400, NOT_MODIFIED)
        for key, value in after.items():
            if value is None:
                message.pop(key, None)
            else:
                message[key] = value
        message["edit_date"] = int(time.time())
        return copy.deepcopy(message)

    def own_message(self, params: Mapping[str, str], verb: str) -> StoredMessage:
        chat_id = self.chat_id(params)
        message_id = _parse_int(params.get("message_id", ""))
        if message_id is None:
            raise bad_request("message identifier is not specified")
        stored = self.world.message(chat_id, message_id)
        if stored is None:
            raise bad_request(f"message to {verb} not found")
        if verb == "edit" and not stored.by_bot:
            raise bad_request("message can't be edited")
        return stored

    def delete_message(self, request: ApiRequest) -> bool:
        stored = self.own_message(request.params, "delete")
        chat_id = stored.message["chat"]["id"]
        del self.world.messages[chat_id][stored.message["message_id"]]
        return True

    # ------------------------------------------------------------------ small actions

    def send_chat_action(self, request: ApiRequest) -> bool:
        validation.chat_action(request.params.get("action"))
        chat_id = self.chat_id(request.params)
        self.placement(chat_id, {"message_thread_id": request.params.get("message_thread_id", "")})
        return True

    def set_message_reaction(self, request: ApiRequest) -> bool:
        reaction = validation.reaction(request.params.get("reaction"))
        stored = self.own_message(request.params, "react")
        key = (stored.message["chat"]["id"], stored.message["message_id"])
        self.world.reactions[key] = reaction
        return True

    def answer_callback_query(self, request: ApiRequest) -> bool:
        query_id = request.params.get("callback_query_id", "")
        if self.world.callback_queries.get(query_id) is not False:
            raise bad_request(
                "query is too old and response timeout expired or query ID is invalid"
            )
        text = request.params.get("text", "")
        if utf16_len(text) > CALLBACK_TEXT_LIMIT:
            raise bad_request("MESSAGE_TOO_LONG")
        alert = request.params.get("show_alert", "false").lower() == "true"
        self.world.callback_queries[query_id] = True
        self.world.callback_answers[query_id] = CallbackAnswer(text=text, show_alert=alert)
        return True

    def set_my_commands(self, request: ApiRequest) -> bool:
        commands = validation.commands(request.params.get("commands"))
        self.world.commands[_commands_key(request.params)] = commands
        return True

    def get_my_commands(self, request: ApiRequest) -> list[dict[str, str]]:
        return list(self.world.commands.get(_commands_key(request.params), []))

    def delete_my_commands(self, request: ApiRequest) -> bool:
        self.world.commands.pop(_commands_key(request.params), None)
        return True

    # ------------------------------------------------------------------ files and webhooks

    def get_file(self, request: ApiRequest) -> Json:
        stored = self.world.files.get(request.params.get("file_id", ""))
        if stored is None:
            raise bad_request("invalid file_id")
        if len(stored.content) > DOWNLOAD_LIMIT:
            raise bad_request("file is too big")
        return {
            "file_id": stored.file_id,
            "file_unique_id": stored.unique_id,
            "file_size": len(stored.content),
            "file_path": stored.path,
        }

    def set_webhook(self, request: ApiRequest) -> bool:
        params = request.params
        url = params.get("url", "")
        secret = validation.webhook_secret(params.get("secret_token"))
        if url and urllib.parse.urlsplit(url).scheme not in ("http", "https"):
            raise bad_request("bad webhook: Webhook URL must be an HTTP(S) URL")
        world = self.world
        world.allowed_updates = validation.allowed_updates(
            params.get("allowed_updates"), world.allowed_updates
        )
        if _parse_bool(params.get("drop_pending_updates")):
            world.drop_pending()
        world.webhook = Webhook(url, secret) if url else None
        return True

    def delete_webhook(self, request: ApiRequest) -> bool:
        if _parse_bool(request.params.get("drop_pending_updates")):
            self.world.drop_pending()
        self.world.webhook = None
        return True

    def get_webhook_info(self, request: ApiRequest) -> Json:
        hook = self.world.webhook
        return {
            "url": hook.url if hook else "",
            "has_custom_certificate": False,
            "pending_update_count": len(self.world.pending),
        }


def _inline_markup(markup: Json | None) -> Json:
    """Only inline keyboards are part of a message; reply keyboards live in the client."""
    if markup is not None and "inline_keyboard" in markup:
        return {"reply_markup": {"inline_keyboard": markup["inline_keyboard"]}}
    return {}


def _suffix(name: str) -> str:
    return PurePosixPath(name).suffix[:16]


def _commands_key(params: Mapping[str, str]) -> str:
    return f"{params.get('scope', '')}|{params.get('language_code', '')}"


def _parse_int(raw: str) -> int | None:
    try:
        return int(raw)
    except ValueError:
        return None


def _parse_bool(raw: str | None) -> bool:
    return (raw or "").lower() in ("true", "1")
