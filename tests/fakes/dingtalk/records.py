"""Frozen records the fake DingTalk keeps (calls, deliveries, acks, sends, cards, uploads)
and the error it answers with; its lock is ``common.records.Guard``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class ApiError(Exception):
    """Any answer that is not a success: ``body`` sent with ``http_status``.

    The two API families fail differently, and the fake keeps that: OpenAPI (``/v1.0/...``)
    answers a 4xx/5xx status with ``{"code": "<string>", "message", "requestid"}``; the legacy
    oapi (``/gettoken``, ``/media/upload``) and session webhooks answer HTTP 200 with
    ``{"errcode": <int>, "errmsg"}``. ``codes`` builds both.
    """

    def __init__(
        self, http_status: int, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(f"HTTP {http_status}: {body}")
        self.http_status = http_status
        self.body = body
        self.headers = dict(headers or {})


@dataclass(frozen=True, slots=True, kw_only=True)
class Call:
    """One HTTP request the bot made, recorded (with the answer) before the answer went out.

    ``body`` is the decoded JSON object; for multipart uploads the text fields plus one
    ``{"filename", "size", "content_type"}`` entry per file part; raw bytes for anything else.
    ``status`` is the HTTP status answered (101 for an accepted websocket upgrade).
    """

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: dict[str, Any] | bytes | None
    status: int
    answer: Any  # the JSON answered (None for file bytes and upgrades)
    token: str | None  # x-acs-dingtalk-access-token header, or the access_token query parameter
    at: float  # time.monotonic() on arrival


@dataclass(frozen=True, slots=True)
class Fault:
    """A scripted answer for the next request matching ``pattern``."""

    pattern: str
    http_status: int
    body: dict[str, Any]
    headers: dict[str, str]


@dataclass(frozen=True, slots=True, kw_only=True)
class Delivery:
    """One stream frame written to a socket. ``attempt`` counts from 1; a redelivery keeps the
    ``message_id`` and the data and raises the attempt."""

    message_id: str
    kind: str  # "CALLBACK" | "EVENT" | "SYSTEM"
    topic: str
    connection: int  # 1 for the first socket accepted, 2 for the next …
    attempt: int
    at: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Ack:
    """The client's answer to a delivered frame.

    ``data`` is the ack's ``data`` JSON string decoded when it holds an object (the SDK sends
    ``{"response": ...}`` for callbacks and echoes the frame's data otherwise), else the raw
    string.
    """

    message_id: str
    code: int
    message: str
    data: dict[str, Any] | str
    connection: int
    at: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Sent:
    """A message the bot sent, whatever the path.

    ``via``: "session" (sessionWebhook), "otom" (oToMessages/batchSend, one per recipient) or
    "group" (groupMessages/send). ``conversation``: the staff id for 1:1 sends and session
    replies to a 1:1 chat, the openConversationId for groups. ``text`` is the text content or
    the markdown text; ``media_id`` the file's mediaId or the image's photoURL.
    """

    via: str
    conversation: str
    msgtype: str  # "text" | "markdown" | "file" | "image"
    text: str
    title: str
    at_user_ids: tuple[str, ...]
    media_id: str
    file_name: str
    raw: dict[str, Any]


@dataclass(frozen=True, slots=True)
class CardUpdate:
    """One accepted card change: ``op`` "streaming" (PUT /card/streaming) or "update"
    (PUT /card/instances), with the request body as sent."""

    op: str
    body: dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class CardView:
    """An AI card instance as it reads now.

    ``content`` holds, per streaming key, the text shown: an ``isFull`` chunk replaces it, any
    other chunk is appended. ``finalized``: flowStatus reached "3"/"5" or a chunk carried
    ``isFinalize`` (streaming is then refused: for every key after flowStatus 3/5, for that
    key after ``isFinalize``). ``error``: a chunk carried ``isError`` or flowStatus is "5".
    """

    out_track_id: str
    template_id: str
    space: str  # "IM_ROBOT" | "IM_GROUP" ("" until delivered)
    target_id: str  # the staff id or openConversationId delivered to
    delivered: bool
    params: dict[str, str]  # cardParamMap, merged over every update
    content: dict[str, str]
    updates: tuple[CardUpdate, ...]
    finalized: bool
    flow_status: str  # "" until set; "1" processing … "3" finished, "5" failed
    error: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Upload:
    """Bytes the bot uploaded through ``/media/upload``."""

    media_id: str
    kind: str  # the upload ``type``: image, file, voice or video
    file_name: str
    data: bytes
    content_type: str
