"""The DingTalk adapter's pure parts: decoding callbacks, rendering, error translation and
the configuration of its URLs."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bot.config.settings import DingTalkSettings
from bot.errors import (
    AuthFailed,
    Forbidden,
    InvalidRequest,
    RateLimited,
    TargetNotFound,
    TransientSendError,
)
from bot.messages import AttachmentKind, ChatType
from channels.dingtalk.errors import ChatThrottled, SessionExpired, failure
from channels.dingtalk.inbound import decode
from channels.dingtalk.render import dingtalk_markdown, title_of

BOT = "$:LWCP_v1:$bot"


def _callback(**fields: object) -> dict[str, object]:
    data: dict[str, object] = {
        "conversationId": "cid_dm_alice",
        "conversationType": "1",
        "msgId": "msg1",
        "msgtype": "text",
        "text": {"content": "hello"},
        "senderNick": "Alice",
        "senderStaffId": "staff_alice",
        "senderId": "$:LWCP_v1:$alice",
        "chatbotUserId": BOT,
        "robotCode": "ding_app",
        "createAt": 1_700_000_000_000,
        "sessionWebhook": "http://127.0.0.1:1/robot/sendBySession?session=s1",
        "sessionWebhookExpiredTime": 1_700_003_600_000,
    }
    data.update(fields)
    return data


def test_a_one_to_one_chat_is_keyed_by_the_senders_staff_id() -> None:
    decoded = decode(_callback(), "dingtalk")
    assert decoded is not None
    message = decoded.message
    assert (message.chat_id, message.chat_type, message.sender.id) == (
        "staff_alice",
        ChatType.DM,
        "staff_alice",
    )
    assert message.message_id == "msg1"
    assert message.text == "hello"
    assert decoded.session is not None
    assert decoded.session.webhook.endswith("session=s1")
    assert decoded.session.expires_ms == 1_700_003_600_000


def test_a_group_is_keyed_by_its_open_conversation_id_and_the_mention_space_is_stripped() -> None:
    decoded = decode(
        _callback(
            conversationType="2",
            conversationId="cidGroup==",
            text={"content": " what is up"},
            isInAtList=True,
        ),
        "dingtalk",
    )
    assert decoded is not None
    assert decoded.message.chat_id == "cidGroup=="
    assert decoded.message.chat_type is ChatType.GROUP
    assert decoded.message.mentions_bot
    assert decoded.message.text == "what is up"


def test_a_group_message_mentions_the_bot_through_at_users_too() -> None:
    mentioned = decode(_callback(conversationType="2", atUsers=[{"dingtalkId": BOT}]), "dingtalk")
    other = decode(
        _callback(conversationType="2", atUsers=[{"dingtalkId": "$:someone"}]), "dingtalk"
    )
    assert mentioned is not None
    assert mentioned.message.mentions_bot
    assert other is not None
    assert not other.message.mentions_bot


def test_rich_text_is_flattened_and_its_pictures_become_attachments() -> None:
    rich = {"richText": [{"text": "look at"}, {"type": "picture", "downloadCode": "dc1"},
                         {"text": "this"}]}  # fmt: skip
    decoded = decode(_callback(msgtype="richText", content=rich), "dingtalk")
    assert decoded is not None
    assert decoded.message.text == "look at\nthis"
    (picture,) = decoded.message.attachments
    assert (picture.kind, picture.ref) == (AttachmentKind.IMAGE, "dc1")


def test_pictures_and_files_carry_their_download_code() -> None:
    picture = decode(_callback(msgtype="picture", content={"downloadCode": "dp"}), "dingtalk")
    file = decode(
        _callback(msgtype="file", content={"downloadCode": "df", "fileName": "report.pdf"}),
        "dingtalk",
    )
    assert picture is not None
    assert file is not None
    assert picture.message.attachments[0].ref == "dp"
    attachment = file.message.attachments[0]
    assert (attachment.kind, attachment.name, attachment.mime, attachment.ref) == (
        AttachmentKind.FILE,
        "report.pdf",
        "application/pdf",
        "df",
    )


def test_a_callback_with_nothing_to_answer_decodes_to_nothing() -> None:
    assert decode(_callback(msgtype="unknownKind"), "dingtalk") is None
    assert decode(_callback(msgId=""), "dingtalk") is None


def test_markdown_keeps_line_breaks_outside_code_and_leaves_code_alone() -> None:
    text = "line one\nline two\n\n```py\nx = 1\ny = 2\n```\nafter"
    rendered = dingtalk_markdown(text)
    assert rendered.startswith("line one  \nline two\n\n```py\nx = 1\ny = 2\n```\nafter")


def test_the_title_is_the_first_line_without_markdown_marks() -> None:
    assert title_of("## **Build** report\nbody") == "Build report"
    assert title_of("\n\n") == "Reply"
    assert len(title_of("x" * 100)) == 30


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (429, {"code": "Throttling.Api", "message": "slow down"}, RateLimited),
        (403, {"code": "Forbidden.AccessDenied.QpsLimitForApi"}, RateLimited),
        (200, {"errcode": 130101, "errmsg": "send too fast"}, ChatThrottled),
        (200, {"errcode": 90006, "errmsg": "minute quota"}, RateLimited),
        (200, {"errcode": 300001, "errmsg": "session expired"}, SessionExpired),
        (401, {"code": "InvalidAuthentication"}, AuthFailed),
        (200, {"errcode": 40089, "errmsg": "bad appkey"}, AuthFailed),
        (400, {"code": "robot.not.in.group"}, Forbidden),
        (400, {"code": "staffId.notExisted"}, TargetNotFound),
        (502, {"code": "http_502"}, TransientSendError),
        (200, {"errcode": -1, "errmsg": "system busy"}, TransientSendError),
        (400, {"code": "InvalidParameter.MsgParam"}, InvalidRequest),
    ],
)
def test_refusals_are_translated_at_the_boundary(
    status: int, body: dict[str, object], kind: type[Exception]
) -> None:
    error = failure(status, body, {})
    assert type(error) is kind


def test_a_per_minute_quota_waits_a_minute_a_full_chat_seconds_and_retry_after_wins() -> None:
    per_minute = failure(200, {"errcode": 90006}, {})
    chat_full = failure(200, {"errcode": 130101}, {})
    told = failure(429, {"code": "Throttling"}, {"Retry-After": "7"})
    assert isinstance(per_minute, RateLimited)
    assert per_minute.retry_after == 60.0
    assert isinstance(chat_full, ChatThrottled)
    assert chat_full.retry_after == 3.0
    assert isinstance(told, RateLimited)
    assert told.retry_after == 7.0
    assert failure(200, {"errcode": 0, "errmsg": "ok"}, {}) is None


def test_urls_are_normalised_and_the_oapi_host_follows_the_api_base() -> None:
    public = DingTalkSettings()
    assert public.oapi_origin == "https://oapi.dingtalk.com"
    proxied = DingTalkSettings(api_base_url="https://gw.example.com/dingtalk/")
    assert proxied.api_base_url == "https://gw.example.com/dingtalk"
    assert proxied.oapi_origin == "https://gw.example.com/dingtalk"
    explicit = DingTalkSettings(oapi_base_url="https://oapi.example.com/")
    assert explicit.oapi_origin == "https://oapi.example.com"


@pytest.mark.parametrize("bad", ["api.dingtalk.com", "ftp://x", "https://x?y=1", "https://u:p@x"])
def test_a_bad_url_names_the_key(bad: str) -> None:
    with pytest.raises(ValidationError, match="api_base_url"):
        DingTalkSettings(api_base_url=bad)
