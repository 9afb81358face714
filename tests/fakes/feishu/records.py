"""Frozen records the fake Feishu keeps (calls, deliveries, acks, messages, cards); its lock is
``common.records.Guard``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class ApiError(Exception):
    """A REST failure as Feishu answers it: ``{"code": code, "msg": msg}`` with ``http_status``."""

    def __init__(
        self,
        code: int,
        msg: str,
        *,
        http_status: int = 400,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(f"{code}: {msg}")
        self.code = code
        self.msg = msg
        self.http_status = http_status
        self.headers = dict(headers or {})


@dataclass(frozen=True, slots=True, kw_only=True)
class Call:
    """One HTTP request the bot made, recorded before its answer went out.

    ``name`` is the SDK-style API name (``im.message.create``, ``cardkit.card_element.content``,
    ``auth.tenant_access_token``, ``ws.endpoint`` …; ``unknown`` for unrouted paths).
    """

    name: str
    method: str
    path: str
    query: dict[str, str]
    json: Any  # the decoded JSON body, or None
    form: dict[str, str]  # multipart / urlencoded text fields
    files: dict[str, tuple[str, int]]  # multipart file field -> (filename, size)
    headers: dict[str, str]
    token: str | None  # the bearer token, if any
    path_params: dict[str, str]
    at: float  # time.monotonic() on arrival
    http_status: int = 200
    code: int = 0  # the envelope code answered (0 = success)


@dataclass(frozen=True, slots=True)
class Fault:
    """A scripted failure for the next call(s) matching a pattern."""

    pattern: str
    code: int
    msg: str
    http_status: int
    headers: dict[str, str]


@dataclass(frozen=True, slots=True)
class Withhold:
    """A call to carry out without ever answering it (``FaultScript.withhold_answer``)."""

    pattern: str
    when: Callable[[Any], bool] | None  # tested on the decoded JSON body


@dataclass(frozen=True, slots=True, kw_only=True)
class Delivery:
    """One event frame (set) written to a long-connection socket."""

    event_id: str
    event_type: str
    frame_id: str  # the frame header ``message_id`` the ack echoes
    connection: int
    parts: int
    at: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Ack:
    """The client's answer to a delivered frame: ``code`` 200 (handled) or 500 (raised).

    ``data`` is the decoded base64 JSON a callback handler (``card.action.trigger``) returned.
    """

    event_id: str
    frame_id: str
    code: int
    data: Any
    biz_rt_ms: int | None
    connection: int
    at: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Redelivery:
    """One check of a delivered event, ``after_s`` after its delivery (redelivery on).

    ``outcome`` is ``"acked"`` (answered 200: settled, never sent again), ``"redelivered"``
    (no ack, or a non-200 one: sent again as ``new_event_id``) or ``"exhausted"`` (it should
    have been sent again but ``times`` redeliveries of ``origin`` were already made).
    """

    event_id: str  # the delivery checked
    frame_id: str
    origin: str  # the event_id the first delivery of this message carried
    ack_code: int | None  # None: no ack by the check
    outcome: str
    new_event_id: str | None
    attempt: int  # redeliveries of ``origin`` made so far, this one included
    at: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Ephemeral:
    """A card sent with ``ephemeral/v1/send``: shown in ``chat_id`` to ``open_id`` alone."""

    message_id: str
    chat_id: str
    open_id: str
    card: dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """A message as the fake holds it now (bot-sent or pushed inbound).

    ``content`` is the parsed current content; ``versions`` every content it had, oldest first.
    """

    message_id: str
    chat_id: str
    chat_type: str
    msg_type: str
    content: dict[str, Any]
    raw_content: str
    sender_id: str  # open_id of a user, or the app_id for the bot
    sender_type: str  # "user" | "app"
    parent_id: str
    root_id: str
    thread_id: str
    reply_in_thread: bool
    uuid: str | None
    card_id: str | None  # the CardKit card it shows, for ``{"type":"card"}`` content
    deleted: bool
    updated: bool
    create_time: int  # ms
    versions: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class CardView:
    """A CardKit card entity as it reads now."""

    card_id: str
    data: dict[str, Any]  # the current card JSON (element contents applied)
    streaming_mode: bool
    sequence: int  # the last accepted sequence (0 before any update)
    elements: dict[str, str]  # element_id -> text content (tag name for non-text elements)
    message_ids: tuple[str, ...]  # the messages that show it
    operations: tuple[tuple[str, int], ...]  # (operation, sequence) accepted, in order


@dataclass(frozen=True, slots=True, kw_only=True)
class Upload:
    """Bytes the bot uploaded (``kind`` image or file) or a test hosted as a resource."""

    key: str
    kind: str
    data: bytes
    file_name: str
    file_type: str  # image_type for images, file_type for files
    content_type: str
