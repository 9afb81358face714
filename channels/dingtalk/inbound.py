"""DingTalk chatbot callbacks → ``InboundMessage`` (design §3, §4, §14). Pure: SDK values in,
kernel values out.

Only this module knows how DingTalk spells things:

- ``msgId`` is the message's id and the kernel's dedupe key (DingTalk redelivers an unacked
  callback with the same one);
- ``conversationType`` ``"1"`` is a 1:1 chat, ``"2"`` a group. Conversations are keyed by ids
  that outlive the session webhook and the process: a 1:1 chat by the sender's staff id (what
  ``oToMessages/batchSend`` addresses), a group by its ``conversationId`` (the
  ``openConversationId`` that ``groupMessages/send`` and card delivery take);
- a group message reaches a robot only when it is @-mentioned (``isInAtList``); DingTalk has
  already removed the mention from ``text.content`` and leaves its space, which is stripped;
- ``richText`` is flattened to Markdown, its pictures become attachments; ``picture`` and
  ``file`` carry a ``downloadCode`` (the attachment's ``ref``) that ``download`` exchanges for
  a URL; an ``audio`` message with DingTalk's own transcript arrives as that text;
- DingTalk never delivers the robot's own messages; DingTalk has no reply threads.
"""

from __future__ import annotations

import mimetypes
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from dingtalk_stream import ChatbotMessage

from bot.messages import Attachment, AttachmentKind, ChatType, InboundMessage, Sender
from channels.dingtalk.sessions import Session

Json = dict[str, Any]
GROUP = "2"


@dataclass(frozen=True, slots=True, kw_only=True)
class Decoded:
    message: InboundMessage
    session: Session | None


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _picture(code: str, message_id: str, index: int) -> Attachment:
    suffix = f"-{index}" if index else ""
    return Attachment(
        kind=AttachmentKind.IMAGE,
        name=f"picture-{message_id[-12:]}{suffix}.png",
        mime="image/png",
        ref=code,
    )


def _rich_text(items: list[object], message_id: str) -> tuple[str, tuple[Attachment, ...]]:
    """Text runs joined as DingTalk shows them (a run per line), pictures as attachments."""
    lines: list[str] = []
    pictures: list[Attachment] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        code = _text(item.get("downloadCode") or item.get("pictureDownloadCode"))
        if code and item.get("type", "picture") == "picture":
            pictures.append(_picture(code, message_id, len(pictures)))
        elif "text" in item:
            lines.append(_text(item["text"]))
    return "\n".join(lines).strip(), tuple(pictures)


def _content(raw: Json, incoming: ChatbotMessage) -> tuple[str, tuple[Attachment, ...]]:
    kind = incoming.message_type
    message_id = str(incoming.message_id or "")
    found = raw.get("content")
    content: Json = found if isinstance(found, dict) else {}
    if kind == "text" and incoming.text is not None:
        return _text(incoming.text.content).strip(), ()
    if kind == "richText" and incoming.rich_text_content is not None:
        return _rich_text(list(incoming.rich_text_content.rich_text_list or []), message_id)
    if kind == "picture":
        code = _text(content.get("downloadCode") or content.get("pictureDownloadCode"))
        return "", (_picture(code, message_id, 0),) if code else ()
    if kind in ("file", "video"):
        code = _text(content.get("downloadCode"))
        name = _text(content.get("fileName")) or f"{kind}-{message_id[-12:]}"
        mime = mimetypes.guess_type(name)[0] or "application/octet-stream"
        attachment_kind = AttachmentKind.FILE if kind == "file" else AttachmentKind.VIDEO
        found = Attachment(kind=attachment_kind, name=name, mime=mime, ref=code)
        return "", (found,) if code else ()
    if kind == "audio":
        return _text(content.get("recognition")).strip(), ()
    return "", ()


def _mentions_bot(incoming: ChatbotMessage) -> bool:
    if incoming.is_in_at_list:
        return True
    bot = incoming.chatbot_user_id
    return bool(bot) and any(user.dingtalk_id == bot for user in incoming.at_users or [])


def _received_at(incoming: ChatbotMessage) -> datetime:
    try:
        return datetime.fromtimestamp(int(incoming.create_at) / 1000, UTC)
    except (TypeError, ValueError):
        return datetime.now(UTC)


def decode(raw: Json, channel: str) -> Decoded | None:
    """The message for the kernel, or ``None`` for a callback that carries nothing to answer."""
    incoming = ChatbotMessage.from_dict(raw)
    message_id = str(incoming.message_id or "")
    sender_id = str(incoming.sender_staff_id or incoming.sender_id or "")
    if not message_id or not sender_id:
        return None
    group = str(incoming.conversation_type) == GROUP
    chat_id = str(incoming.conversation_id or "") if group else sender_id
    text, attachments = _content(raw, incoming)
    if not text and not attachments:
        return None
    message = InboundMessage(
        channel=channel,
        chat_id=chat_id,
        chat_type=ChatType.GROUP if group else ChatType.DM,
        message_id=message_id,
        sender=Sender(id=sender_id, display_name=str(incoming.sender_nick or "")),
        text=text,
        attachments=attachments,
        mentions_bot=group and _mentions_bot(incoming),
        received_at=_received_at(incoming),
    )
    session = None
    if incoming.session_webhook and incoming.session_webhook_expired_time:
        session = Session(
            chat_id=chat_id,
            staff_id=sender_id,
            webhook=str(incoming.session_webhook),
            expires_ms=int(incoming.session_webhook_expired_time),
        )
    return Decoded(message=message, session=session)
