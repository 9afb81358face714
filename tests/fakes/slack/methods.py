"""Web API methods on the fake workspace: ``(world, params) -> response`` or ``ApiError``.

The caller holds the fake's lock, has checked the token and records the call.
"""

from __future__ import annotations

import json
import mimetypes
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

from tests.fakes.slack.blocks import MAX_MARKDOWN_TOTAL, check_content
from tests.fakes.slack.records import ApiError, Ephemeral
from tests.fakes.slack.world import Message, StoredFile, World

Method = Callable[[World, dict[str, Any]], dict[str, Any]]

_EMOJI = re.compile(r"^[a-z0-9_+'\-]+(::skin-tone-[2-6])?$")


def _text(params: dict[str, Any], name: str) -> str | None:
    value = params.get(name)
    return None if value is None or value == "" else str(value)


def _number(params: dict[str, Any], name: str, default: int) -> int:
    raw = str(params.get(name) or default)
    if not raw.isdigit():
        raise ApiError(f"invalid_{name}")
    return int(raw)


def _channel(world: World, params: dict[str, Any], name: str = "channel") -> str:
    channel = world.resolve_channel(params.get(name))
    if channel is None:
        raise ApiError("channel_not_found")
    return channel


def _find_message(world: World, params: dict[str, Any], channel: str) -> Message:
    message = world.find(channel, params.get("ts"))
    if message is None:
        raise ApiError("message_not_found")
    return message


def auth_test(world: World, params: dict[str, Any]) -> dict[str, Any]:
    ids = world.ids
    return {
        "ok": True,
        "url": "https://fake.slack.com/",
        "team": "Fake",
        "user": "fakebot",
        "team_id": ids.team_id,
        "user_id": ids.bot_user_id,
        "bot_id": ids.bot_id,
        "is_enterprise_install": False,
    }


def connections_open(world: World, params: dict[str, Any]) -> dict[str, Any]:
    ticket = uuid.uuid4().hex
    world.tickets.add(ticket)
    ws_origin = "ws" + world.origin.removeprefix("http")
    return {"ok": True, "url": f"{ws_origin}/link/?ticket={ticket}&app_id={world.ids.app_id}"}


def _message_text(params: dict[str, Any]) -> tuple[str, list[dict[str, Any]] | None]:
    markdown = _text(params, "markdown_text")
    if markdown is None:
        blocks = check_content(params)
        return str(params.get("text") or ""), blocks
    if params.get("text") or params.get("blocks"):
        raise ApiError("markdown_text_conflict")
    if len(markdown) > MAX_MARKDOWN_TOTAL:
        raise ApiError("msg_too_long")
    return markdown, None


def post_message(world: World, params: dict[str, Any]) -> dict[str, Any]:
    channel = _channel(world, params)
    text, blocks = _message_text(params)
    message = Message(
        channel=channel,
        ts=world.next_ts(),
        user=world.ids.bot_user_id,
        text=text,
        by_bot=True,
        blocks=blocks,
        thread_ts=_text(params, "thread_ts"),
    )
    world.add_message(message)
    return {"ok": True, "channel": channel, "ts": message.ts, "message": world.render(message)}


def update(world: World, params: dict[str, Any]) -> dict[str, Any]:
    channel = _channel(world, params)
    message = _find_message(world, params, channel)
    if not message.by_bot:
        raise ApiError("cant_update_message")
    text, blocks = _message_text(params)
    if "text" in params or "markdown_text" in params:
        message.text = text
    if "blocks" in params:  # omitted blocks are kept; an empty list removes them
        message.blocks = blocks or None
    message.edited_ts = f"{int(time.time())}.000000"
    return {
        "ok": True,
        "channel": channel,
        "ts": message.ts,
        "text": message.text,
        "message": world.render(message),
    }


def delete(world: World, params: dict[str, Any]) -> dict[str, Any]:
    channel = _channel(world, params)
    message = _find_message(world, params, channel)
    if not message.by_bot:
        raise ApiError("cant_delete_message")
    world.remove(message)
    return {"ok": True, "channel": channel, "ts": message.ts}


def post_ephemeral(world: World, params: dict[str, Any]) -> dict[str, Any]:
    """Recorded in ``world.ephemerals``; the user must be known (a member, as far as the fake
    knows) and the ts it answers belongs to no stored message, so nothing can edit it."""
    channel = _channel(world, params)
    user = _text(params, "user")
    if user is None or user not in world.users:
        raise ApiError("user_not_in_channel")
    text, blocks = _message_text(params)
    ts = world.next_ts()
    shown = Ephemeral(
        channel=channel,
        user=user,
        text=text,
        blocks=blocks,
        thread_ts=_text(params, "thread_ts"),
        ts=ts,
    )
    world.ephemerals.append(shown)
    return {"ok": True, "message_ts": ts}


def _reaction_target(world: World, params: dict[str, Any]) -> tuple[Message, str]:
    channel = _channel(world, params)
    message = world.find(channel, params.get("timestamp"))
    if message is None:
        raise ApiError("message_not_found")
    name = _text(params, "name") or ""
    if not _EMOJI.match(name):
        raise ApiError("invalid_name")
    return message, name


def reactions_add(world: World, params: dict[str, Any]) -> dict[str, Any]:
    message, name = _reaction_target(world, params)
    users = message.reactions.setdefault(name, [])
    if world.ids.bot_user_id in users:
        raise ApiError("already_reacted")
    users.append(world.ids.bot_user_id)
    return {"ok": True}


def reactions_remove(world: World, params: dict[str, Any]) -> dict[str, Any]:
    message, name = _reaction_target(world, params)
    users = message.reactions.get(name, [])
    if world.ids.bot_user_id not in users:
        raise ApiError("no_reaction")
    users.remove(world.ids.bot_user_id)
    if not users:
        del message.reactions[name]
    return {"ok": True}


def replies(world: World, params: dict[str, Any]) -> dict[str, Any]:
    channel = _channel(world, params)
    ts = _text(params, "ts")
    chain = world.thread(channel, ts) if ts else []
    if not chain:
        raise ApiError("thread_not_found")
    limit = max(1, min(_number(params, "limit", 1000), 1000))
    start = _number(params, "cursor", 0)
    page = chain[start : start + limit]
    more = start + limit < len(chain)
    return {
        "ok": True,
        "messages": [world.render(m) for m in page],
        "has_more": more,
        "response_metadata": {"next_cursor": str(start + limit) if more else ""},
    }


def conversations_info(world: World, params: dict[str, Any]) -> dict[str, Any]:
    return {"ok": True, "channel": world.channel_info(_channel(world, params))}


def users_info(world: World, params: dict[str, Any]) -> dict[str, Any]:
    user = world.users.get(str(params.get("user") or ""))
    if user is None:
        raise ApiError("user_not_found")
    return {"ok": True, "user": user}


def get_upload_url(world: World, params: dict[str, Any]) -> dict[str, Any]:
    filename, length = _text(params, "filename"), str(params.get("length") or "")
    if filename is None or not length.isdigit():
        raise ApiError("invalid_arguments")
    file_id = f"F{world.serial():09d}"
    mimetype = mimetypes.guess_type(filename)[0] or "application/octet-stream"
    meta = world.file_meta(
        file_id, name=filename, mimetype=mimetype, size=int(length), user=world.ids.bot_user_id
    )
    world.files[file_id] = StoredFile(meta=meta)
    return {"ok": True, "file_id": file_id, "upload_url": f"{world.origin}/upload/v1/{file_id}"}


def complete_upload(world: World, params: dict[str, Any]) -> dict[str, Any]:
    wanted = params.get("files")
    if isinstance(wanted, str):
        try:
            wanted = json.loads(wanted)
        except ValueError:
            raise ApiError("invalid_arguments") from None
    if not isinstance(wanted, list) or not wanted:
        raise ApiError("invalid_arguments")
    targets = [c for c in str(params.get("channels") or "").split(",") if c]
    if _text(params, "channel_id"):
        targets.insert(0, str(params["channel_id"]))
    channels = [_channel(world, {"channel": c}) for c in targets]
    metas = [_finish_file(world, item) for item in wanted]
    for channel in channels:
        message = Message(
            channel=channel,
            ts=world.next_ts(),
            user=world.ids.bot_user_id,
            text=_text(params, "initial_comment") or "",
            by_bot=True,
            files=metas,
            thread_ts=_text(params, "thread_ts"),
        )
        world.add_message(message)
    return {"ok": True, "files": metas}


def _finish_file(world: World, item: object) -> dict[str, Any]:
    file_id = item.get("id") if isinstance(item, dict) else None
    stored = world.files.get(str(file_id))
    if stored is None or stored.content is None:
        raise ApiError("file_not_found")
    if isinstance(item, dict) and item.get("title"):
        stored.meta["title"] = str(item["title"])
    world.uploads[stored.meta["id"]] = stored.content
    return dict(stored.meta)


METHODS: dict[str, Method] = {
    "auth.test": auth_test,
    "apps.connections.open": connections_open,
    "chat.postMessage": post_message,
    "chat.update": update,
    "chat.delete": delete,
    "chat.postEphemeral": post_ephemeral,
    "reactions.add": reactions_add,
    "reactions.remove": reactions_remove,
    "conversations.replies": replies,
    "conversations.info": conversations_info,
    "users.info": users_info,
    "files.getUploadURLExternal": get_upload_url,
    "files.completeUploadExternal": complete_upload,
}
