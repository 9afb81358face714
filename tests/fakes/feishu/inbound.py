"""Schema-2.0 event payloads as Feishu sends them: ``im.message.receive_v1`` and
``card.action.trigger``, plus the content shapes of received messages."""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any, Required, TypedDict

from tests.fakes.feishu.world import Identity


class MessageFields(TypedDict, total=False):
    """``FakeFeishu.message_payload``'s keyword arguments (its defaults apply), which
    ``push_message`` passes on."""

    chat_id: str
    chat_type: str
    sender_open_id: str
    sender_type: str
    message_type: str
    content: dict[str, Any] | None
    root_id: str
    parent_id: str
    thread_id: str
    mentions: list[dict[str, Any]] | None
    message_id: str | None
    event_id: str | None


class ClickFields(TypedDict, total=False):
    """``FakeFeishu.card_action_payload``'s keyword arguments, which ``push_card_action``
    passes on."""

    message_id: Required[str]
    chat_id: Required[str]
    value: Required[dict[str, Any]]
    open_id: str
    action_tag: str
    event_id: str | None


def _ms() -> str:
    return str(int(time.time() * 1000))


def header(ids: Identity, event_type: str, event_id: str | None = None) -> dict[str, Any]:
    return {
        "event_id": event_id or secrets.token_hex(16),
        "event_type": event_type,
        "create_time": _ms(),
        "token": ids.verification_token,
        "app_id": ids.app_id,
        "tenant_key": ids.tenant_key,
    }


def user_id(open_id: str) -> dict[str, str]:
    """The ``{open_id, union_id, user_id}`` triple the fake derives from an open_id."""
    tail = open_id.removeprefix("ou_")
    return {"open_id": open_id, "union_id": f"on_{tail}", "user_id": tail}


def mention(key: str, open_id: str, name: str, tenant_key: str = "tenant_fake") -> dict[str, Any]:
    """One entry of ``message.mentions``; the text carries ``key`` (``@_user_1``) in its place."""
    return {
        "key": key,
        "id": user_id(open_id),
        "mentioned_type": "user",
        "name": name,
        "tenant_key": tenant_key,
    }


def post_content(paragraphs: list[list[dict[str, Any]]], title: str = "") -> dict[str, Any]:
    """A *received* post's content: ``{"title", "content": [[node, ...], ...]}`` (no locale)."""
    return {"title": title, "content": paragraphs}


def image_content(image_key: str) -> dict[str, Any]:
    return {"image_key": image_key}


def file_content(file_key: str, file_name: str) -> dict[str, Any]:
    return {"file_key": file_key, "file_name": file_name}


@dataclass(frozen=True, slots=True, kw_only=True)
class Said:
    """What a user said, before it is wrapped in an event."""

    message_id: str
    chat_id: str
    chat_type: str
    sender_open_id: str
    sender_type: str
    message_type: str
    content: dict[str, Any]
    root_id: str = ""
    parent_id: str = ""
    thread_id: str = ""
    mentions: list[dict[str, Any]] = field(default_factory=list)


def message_received(ids: Identity, said: Said, event_id: str | None = None) -> dict[str, Any]:
    sender: dict[str, Any] = {
        "sender_id": user_id(said.sender_open_id),
        "sender_type": said.sender_type,
        "tenant_key": ids.tenant_key,
    }
    message = {
        "message_id": said.message_id,
        "root_id": said.root_id,
        "parent_id": said.parent_id,
        "create_time": _ms(),
        "update_time": _ms(),
        "chat_id": said.chat_id,
        "thread_id": said.thread_id,
        "chat_type": said.chat_type,
        "message_type": said.message_type,
        "content": json.dumps(said.content, ensure_ascii=False),
        "mentions": said.mentions,
        "user_agent": "Mozilla/5.0 (fake-feishu)",
    }
    return {
        "schema": "2.0",
        "header": header(ids, "im.message.receive_v1", event_id),
        "event": {"sender": sender, "message": message},
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class Click:
    message_id: str
    chat_id: str
    value: dict[str, Any]
    open_id: str
    action_tag: str


def card_action(ids: Identity, click: Click, event_id: str | None = None) -> dict[str, Any]:
    operator = {"tenant_key": ids.tenant_key, **user_id(click.open_id)}
    return {
        "schema": "2.0",
        "header": header(ids, "card.action.trigger", event_id),
        "event": {
            "operator": operator,
            "token": f"c-{secrets.token_hex(16)}",
            "action": {"value": click.value, "tag": click.action_tag},
            "host": "im_message",
            "delivery_type": "",
            "context": {"open_message_id": click.message_id, "open_chat_id": click.chat_id},
        },
    }


def with_event_id(payload: dict[str, Any], event_id: str) -> dict[str, Any]:
    """The same event under a new ``header.event_id`` (how Feishu redelivers)."""
    copied: dict[str, Any] = json.loads(json.dumps(payload))
    copied["header"]["event_id"] = event_id
    return copied


def message_recalled(
    ids: Identity, message_id: str, chat_id: str, recall_type: str = "message_owner"
) -> dict[str, Any]:
    """``im.message.recalled_v1`` as Feishu sends it (lark-oapi ``P2ImMessageRecalledV1Data``:
    ``message_id``, ``chat_id``, ``recall_time``, ``recall_type``); no sender, no chat type."""
    return {
        "schema": "2.0",
        "header": header(ids, "im.message.recalled_v1"),
        "event": {
            "message_id": message_id,
            "chat_id": chat_id,
            "recall_time": _ms(),
            "recall_type": recall_type,
        },
    }
