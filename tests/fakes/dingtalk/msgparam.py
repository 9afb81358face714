"""What a robot send's ``msgKey`` / ``msgParam`` must be, and the ``Sent`` it makes.

``msgParam`` is a JSON **string** (not an object) of at most 15000 bytes holding the msgKey's
keys as non-empty strings:

    sampleText {content}   sampleMarkdown {title, text}   sampleImageMsg {photoURL}
    sampleFile {mediaId, fileName, fileType}

A ``mediaId`` must be one ``/media/upload`` handed out; a ``photoURL`` an http(s) URL or such
a media id. Anything else answers 400 ``InvalidParameter.MsgKey`` / ``.MsgParam`` /
``.MsgParam.TooLong``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tests.fakes.dingtalk import codes
from tests.fakes.dingtalk.records import ApiError, Sent
from tests.fakes.dingtalk.world import World

MSG_PARAM_LIMIT = 15000  # bytes
MSG_KEYS: dict[str, tuple[str, tuple[str, ...]]] = {
    "sampleText": ("text", ("content",)),
    "sampleMarkdown": ("markdown", ("title", "text")),
    "sampleImageMsg": ("image", ("photoURL",)),
    "sampleFile": ("file", ("mediaId", "fileName", "fileType")),
}


@dataclass(frozen=True, slots=True)
class Message:
    """A validated send: the fake's msgtype and the decoded msgParam."""

    msgtype: str
    params: dict[str, str]

    def sent(self, via: str, conversation: str, raw: dict[str, Any]) -> Sent:
        p = self.params
        text = p.get("content", p.get("text", ""))
        return Sent(
            via=via,
            conversation=conversation,
            msgtype=self.msgtype,
            text=text,
            title=p.get("title", ""),
            at_user_ids=(),
            media_id=p.get("mediaId", p.get("photoURL", "")),
            file_name=p.get("fileName", ""),
            raw=raw,
        )


def _bad(message: str) -> ApiError:
    return codes.bad(codes.MSG_PARAM, message)


def parse(world: World, msg_key: object, msg_param: object) -> Message:
    if not isinstance(msg_key, str) or msg_key not in MSG_KEYS:
        raise codes.bad(codes.MSG_KEY, f"msgKey {msg_key!r} is not supported")
    msgtype, keys = MSG_KEYS[msg_key]
    if not isinstance(msg_param, str):
        raise _bad("msgParam must be a JSON string")
    if len(msg_param.encode()) > MSG_PARAM_LIMIT:
        raise codes.bad(codes.MSG_PARAM_TOO_LONG, f"msgParam exceeds {MSG_PARAM_LIMIT} bytes")
    try:
        params = json.loads(msg_param)
    except ValueError:
        raise _bad("msgParam is not valid JSON") from None
    if not isinstance(params, dict):
        raise _bad("msgParam must hold a JSON object")
    for key in keys:
        if not isinstance(params.get(key), str) or not params[key]:
            raise _bad(f"msgParam of {msg_key} needs a non-empty string {key!r}")
    _check_media(world, params)
    return Message(msgtype, {k: v for k, v in params.items() if isinstance(v, str)})


def _check_media(world: World, params: dict[str, Any]) -> None:
    media_id = params.get("mediaId")
    if media_id is not None and media_id not in world.uploads:
        raise _bad(f"mediaId {media_id!r} was not uploaded")
    photo = params.get("photoURL")
    if photo is None:
        return
    if photo.startswith("@"):
        if photo not in world.uploads:
            raise _bad(f"photoURL media id {photo!r} was not uploaded")
    elif not photo.startswith(("http://", "https://")):
        raise _bad("photoURL must be an http(s) URL or a media id")
