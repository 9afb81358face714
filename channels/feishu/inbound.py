"""Feishu events → ``InboundMessage`` (design §3, §4, §14). Pure: dicts in, values out.

Only this module knows how Feishu spells things:

- ``message_id`` (``om_…``) is the message's id, the kernel's dedupe key: Feishu redelivers an
  unacknowledged event with a new ``event_id`` but the same message;
- ``chat_type`` ``p2p`` is a DM, anything else a group;
- ``root_id`` is the topic (or reply chain) the message belongs to → ``thread_root_id``;
  ``parent_id`` the message it answers → ``reply_to_message_id`` (the kernel's message links
  tell whether that was the bot's);
- mentions arrive as ``@_user_N`` placeholders with a ``mentions`` table: the bot's own are
  removed and set ``mentions_bot``; ``@_all`` is not a mention of the bot; others become
  ``@Name``;
- ``post`` rich text is flattened to Markdown; ``image``/``file``/``audio``/``media`` become
  attachments whose ``ref`` (``AttachmentRef``) names the message, the resource key and type;
- the bot's own messages produce nothing; other apps' are marked ``Sender.is_bot``.

``card.action.trigger`` (a press on one of our card buttons) becomes a message with a
``ButtonPress``; the button's value carries what the event lacks (chat type, topic, label).
"""

from __future__ import annotations

import json
import mimetypes
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bot.messages import (
    Attachment,
    AttachmentKind,
    ButtonPress,
    ChatType,
    InboundMessage,
    Revision,
    RevisionKind,
    Sender,
)
from channels.feishu.post import flatten_post
from channels.feishu.render import VALUE_KEY

Json = dict[str, Any]

MESSAGE_EVENT = "im.message.receive_v1"
RECALLED_EVENT = "im.message.recalled_v1"
"""A message was recalled (by its sender or a chat admin). Feishu sends bots no event for an
edited message: lark-oapi 1.7.5 has no ``im.message.updated``-style event at all."""
CARD_ACTION_EVENT = "card.action.trigger"
ALL_KEY = "@_all"
_SPACES = re.compile(r"[ \t]{2,}")


@dataclass(frozen=True, slots=True, kw_only=True)
class BotSelf:
    """Who the bot is, from ``bot/v3/info``."""

    open_id: str
    app_id: str
    name: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class AttachmentRef:
    """What ``download`` needs: ``GET messages/{message_id}/resources/{key}?type={kind}``."""

    message_id: str
    key: str
    kind: str  # "image" | "file"

    def encode(self) -> str:
        return json.dumps({"m": self.message_id, "k": self.key, "t": self.kind})

    @classmethod
    def decode(cls, ref: str) -> AttachmentRef | None:
        try:
            raw = json.loads(ref)
            return cls(message_id=str(raw["m"]), key=str(raw["k"]), kind=str(raw["t"]))
        except (ValueError, KeyError, TypeError):
            return None


@dataclass(frozen=True, slots=True, kw_only=True)
class CardPress:
    """A press as the adapter needs it to mark the choice on the card."""

    message_id: str
    payload: str
    label: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Decoded:
    """One event for the kernel: the message, a button press to mark, a thread to remember."""

    message: InboundMessage
    press: CardPress | None = None
    thread_root: str | None = None
    """Set when the message was posted in a Feishu thread (topic): replies go in the thread."""


def event_type(payload: Json) -> str:
    header = payload.get("header")
    return str(header.get("event_type") or "") if isinstance(header, dict) else ""


def event_time(millis: object) -> datetime:
    try:
        return datetime.fromtimestamp(int(str(millis)) / 1000, UTC)
    except (TypeError, ValueError, OverflowError):
        return datetime.now(UTC)


class Translator:
    def __init__(self, me: BotSelf, channel_name: str = "feishu") -> None:
        self._me = me
        self._channel = channel_name

    def decode(self, payload: Json) -> Decoded | None:
        """Any event; ``None`` for everything that is nothing for the kernel (acked as is)."""
        kind = event_type(payload)
        if kind == MESSAGE_EVENT:
            message = self.message(payload)
            if message is None:
                return None
            raw: Json = (payload.get("event") or {}).get("message") or {}
            threaded = bool(raw.get("thread_id"))
            root = message.thread_root_id or message.message_id
            return Decoded(message=message, thread_root=root if threaded else None)
        if kind == RECALLED_EVENT:
            recalled = self.recalled(payload)
            return Decoded(message=recalled) if recalled is not None else None
        if kind == CARD_ACTION_EVENT:
            found = self.card_press(payload)
            return Decoded(message=found[0], press=found[1]) if found is not None else None
        return None

    def message(self, payload: Json) -> InboundMessage | None:
        """An ``im.message.receive_v1`` payload, or ``None`` when it is nothing for the kernel."""
        event = payload.get("event") or {}
        message: Json = event.get("message") or {}
        sender: Json = event.get("sender") or {}
        sender_id = str((sender.get("sender_id") or {}).get("open_id") or "")
        message_id, chat_id = (
            str(message.get("message_id") or ""),
            str(message.get("chat_id") or ""),
        )
        if not message_id or not chat_id or self._is_me(sender, sender_id):
            return None
        mentions = _mentions(message.get("mentions"))
        text, attachments = _body(message, message_id)
        if not text.strip() and not attachments:
            return None
        mine = {key for key, (open_id, _) in mentions.items() if open_id == self._me.open_id}
        tenant = _tenant(payload) or str(sender.get("tenant_key") or "")
        return InboundMessage(
            channel=self._channel,
            account_id=tenant,
            chat_id=chat_id,
            chat_type=ChatType.DM if message.get("chat_type") == "p2p" else ChatType.GROUP,
            message_id=message_id,
            sender=Sender(id=sender_id, is_bot=sender.get("sender_type") != "user"),
            text=resolve_mentions(text, mentions, mine),
            attachments=attachments,
            reply_to_message_id=str(message.get("parent_id") or "") or None,
            thread_root_id=str(message.get("root_id") or "") or None,
            mentions_bot=bool(mine),
            received_at=event_time(message.get("create_time")),
        )

    def recalled(self, payload: Json) -> InboundMessage | None:
        """``im.message.recalled_v1`` (``message_id``, ``chat_id``, ``recall_time``,
        ``recall_type``): a withdrawal of the message (design §21). The event names neither
        the sender nor the chat type; the kernel takes both from the recalled message."""
        event: Json = payload.get("event") or {}
        message_id, chat_id = str(event.get("message_id") or ""), str(event.get("chat_id") or "")
        if not message_id or not chat_id:
            return None
        return InboundMessage(
            channel=self._channel,
            account_id=_tenant(payload),
            chat_id=chat_id,
            chat_type=ChatType.GROUP,
            message_id=f"{message_id}/recalled",
            sender=Sender(id=""),
            revision=Revision(kind=RevisionKind.RECALLED, message_id=message_id),
            received_at=event_time(event.get("recall_time")),
        )

    def _is_me(self, sender: Json, open_id: str) -> bool:
        if open_id and open_id == self._me.open_id:
            return True
        app = str((sender.get("sender_id") or {}).get("app_id") or sender.get("app_id") or "")
        return sender.get("sender_type") == "app" and bool(app) and app == self._me.app_id

    def card_press(self, payload: Json) -> tuple[InboundMessage, CardPress] | None:
        """A ``card.action.trigger`` from one of our buttons, or ``None``."""
        event: Json = payload.get("event") or {}
        action: Json = event.get("action") or {}
        value = action.get("value")
        context: Json = event.get("context") or {}
        message_id = str(context.get("open_message_id") or "")
        chat_id = str(context.get("open_chat_id") or "")
        if not isinstance(value, dict) or VALUE_KEY not in value or not message_id or not chat_id:
            return None
        operator: Json = event.get("operator") or {}
        chat_type = ChatType.DM if value.get("chat_type") == ChatType.DM else ChatType.GROUP
        topic = str(value.get("topic") or "") or None
        if chat_type is ChatType.GROUP and topic is None:
            topic = message_id  # a notice about this press belongs under the question
        press_id = str(event.get("token") or (payload.get("header") or {}).get("event_id") or "")
        label = str(value.get("label") or "")
        pressed = str(value[VALUE_KEY])
        inbound = InboundMessage(
            channel=self._channel,
            account_id=_tenant(payload) or str(operator.get("tenant_key") or ""),
            chat_id=chat_id,
            chat_type=chat_type,
            message_id=f"card/{message_id}/{press_id}",
            sender=Sender(id=str(operator.get("open_id") or "")),
            text=label,
            thread_root_id=topic,
            button=ButtonPress(payload=pressed, message_id=message_id),
        )
        return inbound, CardPress(message_id=message_id, payload=pressed, label=label)


def _body(message: Json, message_id: str) -> tuple[str, tuple[Attachment, ...]]:
    kind = str(message.get("message_type") or message.get("msg_type") or "")
    content = _content(message.get("content"))
    if kind == "text":
        return str(content.get("text") or ""), ()
    if kind == "post":
        text, images = flatten_post(content)
        return text, tuple(_image(message_id, key) for key in images)
    found = _resource(kind, content, message_id)
    return "", (found,) if found is not None else ()


def _tenant(payload: Json) -> str:
    """The app's tenant (the event header's), the same for every member of a chat."""
    header = payload.get("header")
    return str(header.get("tenant_key") or "") if isinstance(header, dict) else ""


def _content(raw: object) -> Json:
    if isinstance(raw, dict):
        return raw
    try:
        parsed = json.loads(str(raw or "{}"))
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _mentions(raw: object) -> dict[str, tuple[str, str]]:
    """``@_user_N`` → (open_id, name)."""
    found: dict[str, tuple[str, str]] = {}
    for item in raw if isinstance(raw, list) else ():
        if not isinstance(item, dict) or not item.get("key"):
            continue
        ids = item.get("id")
        open_id = str(ids.get("open_id") or "") if isinstance(ids, dict) else str(ids or "")
        found[str(item["key"])] = (open_id, str(item.get("name") or ""))
    return found


def resolve_mentions(text: str, mentions: dict[str, tuple[str, str]], mine: set[str]) -> str:
    """Placeholders → names; the bot's own removed; ``@_all`` → ``@all``."""
    for key in sorted(mentions, key=len, reverse=True):
        name = mentions[key][1]
        text = text.replace(key, "" if key in mine else f"@{name or key.lstrip('@_')}")
    text = text.replace(ALL_KEY, "@all")
    lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
    return "\n".join(lines).strip()


def _image(message_id: str, key: str) -> Attachment:
    ref = AttachmentRef(message_id=message_id, key=key, kind="image")
    return Attachment(
        kind=AttachmentKind.IMAGE, name=f"image-{key[-12:]}.png", mime="image/png", ref=ref.encode()
    )


_RESOURCE_KINDS = {
    "file": AttachmentKind.FILE,
    "audio": AttachmentKind.AUDIO,
    "media": AttachmentKind.VIDEO,
}
_DEFAULT_NAMES = {"audio": "audio-{}.opus", "media": "video-{}.mp4", "file": "file-{}"}


def _resource(kind: str, content: Json, message_id: str) -> Attachment | None:
    if kind == "image":
        key = str(content.get("image_key") or "")
        return _image(message_id, key) if key else None
    attachment_kind = _RESOURCE_KINDS.get(kind)
    key = str(content.get("file_key") or "")
    if attachment_kind is None or not key:
        return None
    name = str(content.get("file_name") or "") or _DEFAULT_NAMES[kind].format(key[-12:])
    ref = AttachmentRef(message_id=message_id, key=key, kind="file")
    mime = mimetypes.guess_type(name)[0] or "application/octet-stream"
    return Attachment(kind=attachment_kind, name=name, mime=mime, ref=ref.encode())
