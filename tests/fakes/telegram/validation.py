"""Validation of the structured (JSON-in-a-form-field) parameters Switchboard sends.

Error texts are the real server's where known (``BUTTON_DATA_INVALID``, ``BOT_COMMAND_INVALID``,
``REACTION_INVALID`` ...), so the adapter's error classification is tested against them.
"""

from __future__ import annotations

import json
import re
from typing import Any

from telegram.constants import ChatAction, ReactionEmoji

from tests.fakes.telegram.errors import bad_request

_COMMAND = re.compile(r"[a-z0-9_]{1,32}")
_SECRET = re.compile(r"[A-Za-z0-9_-]{1,256}")
_BUTTON_ACTIONS = frozenset(
    {"url", "callback_data", "web_app", "login_url", "switch_inline_query",
     "switch_inline_query_current_chat", "switch_inline_query_chosen_chat", "copy_text",
     "callback_game", "pay"}
)  # fmt: skip
_MARKUP_KINDS = ("inline_keyboard", "keyboard", "remove_keyboard", "force_reply")
CHAT_ACTIONS = frozenset(action.value for action in ChatAction)
REACTION_EMOJI = frozenset(emoji.value for emoji in ReactionEmoji)
MAX_CALLBACK_DATA_BYTES = 64
MAX_INLINE_BUTTONS = 100
"""An inline keyboard of more buttons is refused as ``REPLY_MARKUP_TOO_LONG``."""


def load_json(raw: str, what: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        raise bad_request(f"can't parse {what} JSON object") from None


def reply_markup(raw: str | None) -> dict[str, Any] | None:
    """Parses ``reply_markup``; inline buttons need one action and 1-64 bytes of data, and
    a keyboard holds at most 100 of them."""
    if not raw:
        return None
    markup = load_json(raw, "reply keyboard markup")
    if not isinstance(markup, dict) or not any(kind in markup for kind in _MARKUP_KINDS):
        raise bad_request("can't parse reply keyboard markup JSON object")
    rows = markup.get("inline_keyboard")
    if rows is None:
        return markup
    if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
        raise bad_request('Field "inline_keyboard" of the InlineKeyboardMarkup must be an Array')
    if sum(len(row) for row in rows) > MAX_INLINE_BUTTONS:
        raise bad_request("REPLY_MARKUP_TOO_LONG")
    for row in rows:
        for button in row:
            _inline_button(button)
    return markup


def _inline_button(button: object) -> None:
    prefix = "can't parse inline keyboard button: "
    if not isinstance(button, dict) or not isinstance(button.get("text"), str):
        raise bad_request(prefix + 'Field "text" must be of type String')
    actions = [name for name in _BUTTON_ACTIONS if name in button]
    if not actions:
        raise bad_request(prefix + "Text buttons are unallowed in the inline keyboard")
    data = button.get("callback_data")
    if "callback_data" in actions and (
        not isinstance(data, str) or not 1 <= len(data.encode()) <= MAX_CALLBACK_DATA_BYTES
    ):
        raise bad_request("BUTTON_DATA_INVALID")


def reaction(raw: str | None) -> list[dict[str, Any]]:
    """A bot may set at most one reaction, and only from Telegram's emoji list."""
    if not raw:
        return []
    value = load_json(raw, "reaction types")
    if not isinstance(value, list):
        raise bad_request("can't parse reaction types JSON object")
    for item in value:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "emoji" and item.get("emoji") in REACTION_EMOJI:
            continue
        custom = item.get("custom_emoji_id") if isinstance(item, dict) else None
        if kind == "custom_emoji" and isinstance(custom, str) and custom.isdigit():
            continue
        if kind == "paid":
            continue
        raise bad_request("REACTION_INVALID")
    if len(value) > 1:
        raise bad_request("REACTIONS_TOO_MANY")
    return value


def commands(raw: str | None) -> list[dict[str, str]]:
    value = load_json(raw or "[]", "commands")
    if not isinstance(value, list):
        raise bad_request("can't parse commands JSON object")
    if len(value) > 100:
        raise bad_request("BOT_COMMANDS_TOO_MUCH")
    for item in value:
        if not isinstance(item, dict):
            raise bad_request("can't parse BotCommand: expected an Object")
        for name in ("command", "description"):
            if not isinstance(item.get(name), str):
                raise bad_request(f"can't parse BotCommand: Can't find field \"{name}\"")
        if not _COMMAND.fullmatch(item["command"]):
            raise bad_request("BOT_COMMAND_INVALID")
        if not item["description"].strip():
            raise bad_request("command description must be non-empty")
        if len(item["description"]) > 256:
            raise bad_request("BOT_COMMAND_DESCRIPTION_INVALID")
    return value


def allowed_updates(raw: str | None, current: frozenset[str]) -> frozenset[str]:
    """A given ``allowed_updates`` replaces the remembered one; ``[]`` restores the default."""
    if raw is None:
        return current
    value = load_json(raw, "allowed updates")
    if not isinstance(value, list) or not all(isinstance(kind, str) for kind in value):
        raise bad_request("can't parse allowed updates JSON object")
    return frozenset(value)


def chat_action(action: str | None) -> str:
    if action is None or action not in CHAT_ACTIONS:
        raise bad_request("wrong parameter action in request")
    return action


def webhook_secret(secret: str | None) -> str | None:
    if secret and not _SECRET.fullmatch(secret):
        raise bad_request("secret token contains unallowed characters")
    return secret or None
