"""Chatbot callback data as DingTalk pushes it on topic ``/v1.0/im/bot/messages/get``.

Field names are the ones ``dingtalk_stream.ChatbotMessage.from_dict`` reads (PLATFORMS §4):
text lives in ``text.content``; pictures and rich text in ``content`` (``downloadCode``,
``richText``); files in ``content`` too (the SDK keeps it in ``extensions``). In a group
DingTalk strips the robot's @name from the text but leaves the space after it, so an
@-mention of the robot arrives as ``" hello"``; the fake does the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

from tests.fakes.dingtalk.world import Identity, Session, User


class MessageFields(TypedDict, total=False):
    """``FakeDingTalk.message_payload``'s keyword arguments (its defaults apply), which
    ``push_message`` passes on."""

    conversation_type: str
    conversation_id: str | None
    sender_staff_id: str
    sender_nick: str
    msgtype: str
    content: dict[str, Any] | None
    at_bot: bool
    at_users: tuple[str, ...]
    msg_id: str | None
    session_ttl_s: float
    conversation_title: str
    is_admin: bool


ONE_TO_ONE = "1"
GROUP = "2"


def picture_content(download_code: str) -> dict[str, Any]:
    """``content`` of a ``picture`` message."""
    return {"downloadCode": download_code, "pictureDownloadCode": download_code}


def file_content(download_code: str, file_name: str) -> dict[str, Any]:
    """``content`` of a ``file`` message."""
    return {"downloadCode": download_code, "fileName": file_name}


def rich_text_content(*items: str | dict[str, Any]) -> dict[str, Any]:
    """``content`` of a ``richText`` message: a str is a text run, a dict is used as given
    (``rich_picture(code)`` for an inline picture)."""
    return {"richText": [{"text": item} if isinstance(item, str) else item for item in items]}


def rich_picture(download_code: str) -> dict[str, Any]:
    return {"downloadCode": download_code, "type": "picture"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Said:
    """What a user said, before it is wrapped in callback data."""

    sender: User
    conversation_type: str
    conversation_id: str
    conversation_title: str
    msgtype: str
    text: str | None
    content: dict[str, Any] | None
    at_bot: bool
    at_users: tuple[User, ...]
    msg_id: str
    is_admin: bool


def chatbot_message(
    ids: Identity, said: Said, session: Session, webhook: str, now_ms: int
) -> dict[str, Any]:
    """The decoded ``data`` of the callback frame for ``said``."""
    at_users: list[dict[str, Any]] = [{"dingtalkId": ids.chatbot_user_id}] if said.at_bot else []
    at_users += [{"dingtalkId": u.dingtalk_id, "staffId": u.staff_id} for u in said.at_users]
    data: dict[str, Any] = {
        "conversationId": said.conversation_id,
        "conversationType": said.conversation_type,
        "msgId": said.msg_id,
        "msgtype": said.msgtype,
        "senderNick": said.sender.nick,
        "senderStaffId": said.sender.staff_id,
        "senderId": said.sender.dingtalk_id,
        "senderCorpId": ids.corp_id,
        "chatbotUserId": ids.chatbot_user_id,
        "chatbotCorpId": ids.corp_id,
        "robotCode": ids.client_id,
        "isAdmin": said.is_admin,
        "isInAtList": said.at_bot,
        "atUsers": at_users,
        "createAt": now_ms,
        "sessionWebhook": webhook,
        "sessionWebhookExpiredTime": session.expires_ms,
    }
    if said.conversation_type == GROUP:
        data["conversationTitle"] = said.conversation_title
    data.update(_body(said))
    return data


def _body(said: Said) -> dict[str, Any]:
    if said.msgtype == "text" and said.content is not None:
        return {"text": said.content}
    if said.msgtype == "text":
        text = said.text or ""
        if said.conversation_type == GROUP and said.at_bot and not text.startswith(" "):
            text = " " + text  # the robot's "@name" was stripped, its trailing space wasn't
        return {"text": {"content": text}}
    if said.content is None:
        raise ValueError(f"msgtype {said.msgtype!r} needs content= (see picture_content & co.)")
    return {"content": said.content}
