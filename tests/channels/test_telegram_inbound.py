"""Telegram updates → InboundMessage: mentions, topics, replies, files, buttons (design §3, §14)."""

from __future__ import annotations

from typing import Any

import pytest
from telegram import Update

from bot.messages import AttachmentKind, ChatType, InboundMessage
from channels.telegram.inbound import BotMe, forum_thread_of, to_inbound

ME = BotMe(channel="telegram", user_id=999, username="fake_bot")
BOT_USER = {"id": 999, "is_bot": True, "first_name": "FakeBot", "username": "fake_bot"}
ALICE = {"id": 42, "is_bot": False, "first_name": "Alice", "last_name": "A"}


def _message(text: str | None = None, **fields: Any) -> dict[str, Any]:
    chat = fields.pop("chat", {"id": 42, "type": "private", "first_name": "Alice"})
    message: dict[str, Any] = {"message_id": 1000, "date": 1700000000, "chat": chat}
    message["from"] = fields.pop("sender", ALICE)
    if text is not None:
        message["text"] = text
    message.update(fields)
    return message


def _read(message: dict[str, Any]) -> InboundMessage:
    found = to_inbound(Update.de_json({"update_id": 1, "message": message}, None), ME)
    assert found is not None
    return found


def _mention(text: str, needle: str, kind: str = "mention") -> dict[str, Any]:
    prefix = text[: text.index(needle)]
    offset = len(prefix.encode("utf-16-le")) // 2
    length = len(needle.encode("utf-16-le")) // 2
    entity: dict[str, Any] = {"type": kind, "offset": offset, "length": length}
    if kind == "text_mention":
        entity["user"] = BOT_USER
    return entity


def test_a_private_message_is_a_dm_from_its_sender() -> None:
    found = _read(_message("hello"))
    assert found.chat_type is ChatType.DM
    assert (found.chat_id, found.message_id, found.account_id) == ("42", "1000", "999")
    assert found.sender.id == "42"
    assert found.sender.display_name == "Alice A"
    assert found.text == "hello"
    assert not found.mentions_bot


def test_a_leading_mention_is_removed_and_noted() -> None:
    text = "@fake_bot, what is 2+2?"
    group = {"id": -100, "type": "supergroup", "title": "Team"}
    found = _read(_message(text, chat=group, entities=[_mention(text, "@fake_bot")]))
    assert found.chat_type is ChatType.GROUP
    assert found.mentions_bot
    assert found.text == "what is 2+2?"


def test_a_mention_after_emoji_is_found_in_utf16_offsets() -> None:
    text = "👋🏽 hey @Fake_Bot look"
    found = _read(_message(text, entities=[_mention(text, "@Fake_Bot")]))
    assert found.mentions_bot
    assert found.text == text  # not leading: the text stays as written


def test_a_text_mention_of_the_bot_counts() -> None:
    text = "FakeBot summarise this"
    found = _read(_message(text, entities=[_mention(text, "FakeBot", "text_mention")]))
    assert found.mentions_bot
    assert found.text == "summarise this"


def test_a_mention_of_someone_else_is_not_the_bot() -> None:
    text = "@other_bot hi"
    found = _read(_message(text, entities=[_mention(text, "@other_bot")]))
    assert not found.mentions_bot
    assert found.text == text


def test_a_command_suffix_is_left_for_the_kernel() -> None:
    text = "/help@fake_bot"
    entity = {"type": "bot_command", "offset": 0, "length": len(text)}
    assert _read(_message(text, entities=[entity])).text == "/help@fake_bot"


def test_a_forum_topic_is_the_thread_and_its_implicit_reply_is_ignored() -> None:
    forum = {"id": -200, "type": "supergroup", "title": "Forum", "is_forum": True}
    created = _message(None, chat=forum, message_id=77, forum_topic_created={
        "name": "Ideas", "icon_color": 7322096})  # fmt: skip
    found = _read(
        _message(
            "in the topic", chat=forum, message_thread_id=77, is_topic_message=True,
            reply_to_message=created,
        )
    )  # fmt: skip
    assert found.thread_root_id == "topic:77"
    assert forum_thread_of(found.thread_root_id) == 77
    assert found.reply_to_message_id is None


def test_a_reply_to_the_bot_is_marked() -> None:
    bot_message = _message("earlier answer", message_id=990, sender=BOT_USER)
    found = _read(_message("and then?", reply_to_message=bot_message))
    assert found.reply_to_message_id == "990"
    assert found.reply_to_bot
    other = _read(_message("+1", reply_to_message=_message("x", message_id=5)))
    assert other.reply_to_message_id == "5"
    assert not other.reply_to_bot


def test_a_caption_is_the_text_and_the_largest_photo_is_the_attachment() -> None:
    sizes = [
        {"file_id": f"p{n}", "file_unique_id": f"u{n}", "width": w, "height": w, "file_size": s}
        for n, w, s in ((1, 90, 1000), (3, 1280, 90000), (2, 320, 9000))
    ]
    found = _read(_message(None, caption="look at this", photo=sizes))
    assert found.text == "look at this"
    (photo,) = found.attachments
    assert (photo.kind, photo.ref, photo.size, photo.mime) == (
        AttachmentKind.IMAGE, "p3", 90000, "image/jpeg",
    )  # fmt: skip


def test_documents_voice_audio_and_video_become_attachments() -> None:
    document = {"file_id": "d", "file_unique_id": "ud", "file_name": "report.pdf",
                "mime_type": "application/pdf", "file_size": 10}  # fmt: skip
    voice = {"file_id": "v", "file_unique_id": "uv", "duration": 2, "mime_type": "audio/ogg"}
    video = {"file_id": "m", "file_unique_id": "um", "width": 1, "height": 1, "duration": 1}
    assert _read(_message(None, document=document)).attachments[0].name == "report.pdf"
    (audio,) = _read(_message(None, voice=voice)).attachments
    assert (audio.kind, audio.name) == (AttachmentKind.AUDIO, "voice_uv.ogg")
    (clip,) = _read(_message(None, video=video)).attachments
    assert (clip.kind, clip.ref) == (AttachmentKind.VIDEO, "m")


@pytest.mark.parametrize(
    "update",
    [
        {"update_id": 1, "edited_message": _message(None, new_chat_members=[ALICE])},
        {"update_id": 1, "message": _message(None, new_chat_members=[ALICE])},
        {"update_id": 1, "message": _message("post", chat={"id": -5, "type": "channel"})},
    ],
)
def test_updates_without_anything_to_answer_are_skipped(update: dict[str, Any]) -> None:
    assert to_inbound(Update.de_json(update, None), ME) is None


def test_a_button_press_is_a_unique_inbound_with_its_payload() -> None:
    question = _message("❓ Which?", message_id=1005, sender=BOT_USER)
    query = {"id": "4000000001", "from": ALICE, "chat_instance": "x", "data": "c/abc/1",
             "message": question}  # fmt: skip
    found = to_inbound(Update.de_json({"update_id": 9, "callback_query": query}, None), ME)
    assert found is not None
    assert found.message_id == "cb:4000000001"
    assert found.button is not None
    assert (found.button.payload, found.button.message_id) == ("c/abc/1", "1005")
    assert found.sender.id == "42"
