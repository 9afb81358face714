"""Builders for what Slack sends a bot: event_callback bodies, message events, block_actions
payloads, and the v0 request signature."""

from __future__ import annotations

import hashlib
import hmac
import re
import time
import uuid
from dataclasses import dataclass
from typing import Any

from tests.fakes.slack.world import Identity, Message

_MENTION = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^>]*)?>")


def sign(secret: str, timestamp: int | str, body: bytes) -> str:
    base = f"v0:{timestamp}:".encode() + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def event_callback(ids: Identity, event: dict[str, Any], event_id: str) -> dict[str, Any]:
    authorization = {
        "enterprise_id": None,
        "team_id": ids.team_id,
        "user_id": ids.bot_user_id,
        "is_bot": True,
        "is_enterprise_install": False,
    }
    return {
        "token": "fake-verification-token",
        "team_id": ids.team_id,
        "context_team_id": ids.team_id,
        "context_enterprise_id": None,
        "api_app_id": ids.app_id,
        "event": event,
        "type": "event_callback",
        "event_id": event_id,
        "event_time": int(time.time()),
        "authorizations": [authorization],
        "is_ext_shared_channel": False,
        "event_context": f"4-fake-{event_id}",
    }


def rich_text(text: str) -> list[dict[str, Any]]:
    """The rich_text block Slack clients attach to a typed message, mentions included."""
    elements: list[dict[str, Any]] = []
    position = 0
    for match in _MENTION.finditer(text):
        if match.start() > position:
            elements.append({"type": "text", "text": text[position : match.start()]})
        elements.append({"type": "user", "user_id": match.group(1)})
        position = match.end()
    if position < len(text):
        elements.append({"type": "text", "text": text[position:]})
    section = {"type": "rich_text_section", "elements": elements}
    block_id = uuid.uuid4().hex[:5]
    return [{"type": "rich_text", "block_id": block_id, "elements": [section]}]


def message_events(
    ids: Identity, message: Message, channel_type: str, parent_user_id: str | None
) -> dict[str, dict[str, Any]]:
    """The ``message`` and ``app_mention`` events Slack sends about one human message."""
    event: dict[str, Any] = {
        "user": message.user,
        "text": message.text,
        "ts": message.ts,
        "event_ts": message.ts,
        "team": ids.team_id,
        "client_msg_id": str(uuid.uuid4()),
    }
    if message.text:
        event["blocks"] = rich_text(message.text)
    if message.thread_ts:
        event["thread_ts"] = message.thread_ts
        if parent_user_id:
            event["parent_user_id"] = parent_user_id
    if message.files:
        event.update(files=message.files, upload=False, display_as_bot=False)
    mention = {"type": "app_mention", **event, "channel": message.channel}
    event = {"type": "message", **event, "channel": message.channel, "channel_type": channel_type}
    if message.files:
        event["subtype"] = "file_share"
    return {"message": event, "app_mention": mention}


@dataclass(frozen=True, slots=True, kw_only=True)
class Click:
    channel: str
    message_ts: str
    action_id: str
    value: str
    user: str
    thread_ts: str | None = None


def block_actions(
    ids: Identity, click: Click, message: dict[str, Any], response_url: str
) -> dict[str, Any]:
    """The payload of a button click; ``message`` is the clicked message as it reads now."""
    block_id, button_text = _find_button(message.get("blocks") or [], click.action_id)
    container: dict[str, Any] = {
        "type": "message",
        "message_ts": click.message_ts,
        "channel_id": click.channel,
        "is_ephemeral": False,
    }
    if click.thread_ts:
        container["thread_ts"] = click.thread_ts
    user, channel = click.user, click.channel
    action = {
        "type": "button",
        "action_id": click.action_id,
        "block_id": block_id,
        "value": click.value,
        "text": {"type": "plain_text", "text": button_text, "emoji": True},
        "action_ts": f"{time.time():.6f}",
    }
    return {
        "type": "block_actions",
        "user": {
            "id": user,
            "username": user.lower(),
            "name": user.lower(),
            "team_id": ids.team_id,
        },
        "api_app_id": ids.app_id,
        "token": "fake-verification-token",
        "container": container,
        "trigger_id": f"{int(time.time())}.{uuid.uuid4().hex[:12]}",
        "team": {"id": ids.team_id, "domain": "fake"},
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": {"id": channel, "name": channel.lower()},
        "message": message,
        "state": {"values": {}},
        "response_url": response_url,
        "actions": [action],
    }


def _find_button(blocks: list[Any], action_id: str) -> tuple[str, str]:
    for block in blocks:
        if not isinstance(block, dict):
            continue
        elements = list(block.get("elements") or [])
        if isinstance(block.get("accessory"), dict):
            elements.append(block["accessory"])
        for element in elements:
            if isinstance(element, dict) and element.get("action_id") == action_id:
                text = element.get("text")
                label = text.get("text", "") if isinstance(text, dict) else ""
                return str(block.get("block_id") or uuid.uuid4().hex[:5]), str(label)
    return uuid.uuid4().hex[:5], ""


def changed_event(
    ids: Identity, before: dict[str, Any], after: Message, channel_type: str, event_ts: str
) -> dict[str, Any]:
    """``message`` subtype ``message_changed``: the message as it reads now (with
    ``edited: {user, ts}``) and as it read before, ``hidden: true``, under a new ``ts``."""
    current = after.as_api(ids)
    if after.text:
        current["blocks"] = rich_text(after.text)
    return {
        "type": "message",
        "subtype": "message_changed",
        "hidden": True,
        "message": current,
        "previous_message": before,
        "channel": after.channel,
        "channel_type": channel_type,
        "ts": event_ts,
        "event_ts": event_ts,
    }


def deleted_event(
    before: dict[str, Any], channel: str, channel_type: str, event_ts: str
) -> dict[str, Any]:
    """``message`` subtype ``message_deleted``: ``deleted_ts`` names the message, and
    ``previous_message`` is how it read."""
    return {
        "type": "message",
        "subtype": "message_deleted",
        "hidden": True,
        "deleted_ts": before["ts"],
        "previous_message": before,
        "channel": channel,
        "channel_type": channel_type,
        "ts": event_ts,
        "event_ts": event_ts,
    }
