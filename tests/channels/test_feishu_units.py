"""Feishu adapter pieces that need no server: rendering, inbound conversion, errors, config."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.config.loader import load_settings
from bot.errors import (
    AuthFailed,
    ConfigError,
    Forbidden,
    InvalidRequest,
    MessageGone,
    RateLimited,
    SendErrorKind,
    TransientSendError,
)
from bot.messages import AttachmentKind, Button, ChatType
from channels.feishu.errors import translate
from channels.feishu.inbound import AttachmentRef, BotSelf, Translator, resolve_mentions
from channels.feishu.outbound import file_type_for
from channels.feishu.post import flatten_post
from channels.feishu.render import (
    CONTENT_LIMIT,
    TEXT_LIMIT,
    ButtonScope,
    Rung,
    chosen_card,
    render,
    streaming_card,
)

ME = BotSelf(open_id="ou_bot", app_id="cli_app", name="Switchboard")
SCOPE = ButtonScope(chat_type="group", topic_id="om_root")


def message_event(**fields: Any) -> dict[str, Any]:
    content = fields.pop("content", {"text": "hello"})
    message = {
        "message_id": "om_1",
        "root_id": "",
        "parent_id": "",
        "create_time": "1700000000000",
        "chat_id": "oc_chat",
        "thread_id": "",
        "chat_type": "p2p",
        "message_type": "text",
        "content": json.dumps(content),
        "mentions": [],
        **fields,
    }
    sender = {"sender_id": {"open_id": "ou_user"}, "sender_type": "user", "tenant_key": "t1"}
    return {
        "schema": "2.0",
        "header": {"event_id": "e1", "event_type": "im.message.receive_v1", "tenant_key": "t1"},
        "event": {"sender": sender, "message": message},
    }


def mention(key: str, open_id: str, name: str) -> dict[str, Any]:
    return {"key": key, "id": {"open_id": open_id}, "name": name}


# --------------------------------------------------------------------------- rendering


def content_size(text: str, rung: Rung = Rung.CARD, buttons: tuple[Button, ...] = ()) -> int:
    return len(render(text, rung, buttons, SCOPE).content.encode())


@pytest.mark.parametrize("char", ['"', "\\", "😀", "\n", "汉", "\u2028"])
def test_a_full_chunk_of_the_worst_characters_fits_a_card(char: str) -> None:
    buttons = tuple(Button(label=f"option {i}", payload=f"clar/abc/{i}") for i in range(5))
    assert content_size(char * TEXT_LIMIT, Rung.CARD, buttons) < CONTENT_LIMIT
    assert content_size(char * TEXT_LIMIT, Rung.POST) < CONTENT_LIMIT
    streaming = json.dumps(streaming_card(char * TEXT_LIMIT), ensure_ascii=False)
    assert len(streaming.encode()) < CONTENT_LIMIT


def test_control_characters_are_dropped_so_they_cannot_grow_a_card() -> None:
    rendered = render("a\x01b\x1fc", Rung.CARD)
    card = json.loads(rendered.content)
    assert card["body"]["elements"][0]["content"] == "abc"


def test_an_oversized_card_is_refused_before_sending() -> None:
    with pytest.raises(InvalidRequest):
        render("😀" * 9000, Rung.CARD)


def test_card_post_and_text_rungs() -> None:
    card = render("**hi** <at id=all></at>", Rung.CARD)
    assert card.msg_type == "interactive"
    parsed = json.loads(card.content)
    assert parsed["schema"] == "2.0"
    assert parsed["body"]["elements"][0] == {
        "tag": "markdown",
        "content": "**hi** &lt;at id=all>&lt;/at>",
        "element_id": "sb_answer",
    }
    post = render("**hi**", Rung.POST)
    assert post.msg_type == "post"
    assert json.loads(post.content) == {"zh_cn": {"content": [[{"tag": "md", "text": "**hi**"}]]}}
    text = render('hi <at user_id="all">', Rung.TEXT)
    assert text.msg_type == "text"
    assert "<at" not in json.loads(text.content)["text"]
    assert render("  ", Rung.TEXT).content == '{"text":"(empty)"}'


def test_buttons_carry_their_payload_and_where_they_live() -> None:
    buttons = (Button(label="Yes", payload="clar/1/0"), Button(label="No", payload="clar/1/1"))
    for rung in Rung:
        card = json.loads(render("Proceed?", rung, buttons, SCOPE).content)
        elements = card["body"]["elements"]
        assert [e["tag"] for e in elements] == [elements[0]["tag"], "button", "button"]
        value = elements[1]["behaviors"][0]["value"]
        assert value == {"switchboard": "clar/1/0", "label": "Yes", "chat_type": "group",
                         "topic": "om_root"}  # fmt: skip


def test_a_chosen_card_disables_every_button_and_names_the_choice() -> None:
    buttons = (Button(label="Yes", payload="p0"), Button(label="No", payload="p1"))
    card = chosen_card("Proceed?", buttons, SCOPE, "p1", "No")
    elements = card["body"]["elements"]
    assert "Proceed?" in elements[0]["content"]
    assert "Chosen: **No**" in elements[0]["content"]
    assert all(e["disabled"] for e in elements[1:])
    assert [e["type"] for e in elements[1:]] == ["default", "primary"]


# --------------------------------------------------------------------------- inbound


def test_a_dm_text_message() -> None:
    message = Translator(ME).message(message_event())
    assert message is not None
    assert (message.chat_type, message.message_id, message.text) == (ChatType.DM, "om_1", "hello")
    assert message.sender.id == "ou_user"
    assert not message.sender.is_bot
    assert message.thread_root_id is None
    assert message.reply_to_message_id is None


def test_the_bots_mention_is_stripped_and_others_named() -> None:
    event = message_event(
        chat_type="group",
        content={"text": "@_user_1 ask @_user_2 and @_all now"},
        mentions=[mention("@_user_1", "ou_bot", "Switchboard"), mention("@_user_2", "ou_x", "Ann")],
    )
    message = Translator(ME).message(event)
    assert message is not None
    assert message.chat_type is ChatType.GROUP
    assert message.mentions_bot
    assert message.text == "ask @Ann and @all now"


def test_at_all_is_not_a_mention_of_the_bot() -> None:
    event = message_event(chat_type="group", content={"text": "@_all hi"})
    message = Translator(ME).message(event)
    assert message is not None
    assert not message.mentions_bot
    assert message.text == "@all hi"


def test_resolve_mentions_does_not_confuse_user_1_and_user_10() -> None:
    mentions = {"@_user_1": ("ou_a", "A"), "@_user_10": ("ou_b", "B")}
    assert resolve_mentions("@_user_10 @_user_1", mentions, set()) == "@B @A"


def test_topics_and_reply_chains_map_to_threads() -> None:
    translator = Translator(ME)
    event = message_event(root_id="om_root", parent_id="om_parent", thread_id="omt_1")
    decoded = translator.decode(event)
    assert decoded is not None
    assert decoded.message.thread_root_id == "om_root"
    assert decoded.message.reply_to_message_id == "om_parent"
    assert decoded.thread_root == "om_root"
    chain = translator.decode(message_event(root_id="om_root", parent_id="om_root"))
    assert chain is not None
    assert chain.thread_root is None
    assert chain.message.thread_root_id == "om_root"


def test_the_bots_own_messages_are_ignored_and_other_apps_marked() -> None:
    event = message_event()
    event["event"]["sender"] = {"sender_id": {"open_id": "ou_bot"}, "sender_type": "app"}
    assert Translator(ME).message(event) is None
    event["event"]["sender"] = {"sender_id": {"open_id": "ou_other"}, "sender_type": "app"}
    other = Translator(ME).message(event)
    assert other is not None
    assert other.sender.is_bot


def test_images_and_files_become_attachments() -> None:
    translator = Translator(ME)
    image = translator.message(message_event(message_type="image", content={"image_key": "img_1"}))
    assert image is not None
    (attachment,) = image.attachments
    assert attachment.kind is AttachmentKind.IMAGE
    assert AttachmentRef.decode(attachment.ref) == AttachmentRef(
        message_id="om_1", key="img_1", kind="image"
    )
    file = translator.message(
        message_event(message_type="file", content={"file_key": "file_1", "file_name": "a.pdf"})
    )
    assert file is not None
    (attachment,) = file.attachments
    assert (attachment.name, attachment.mime) == ("a.pdf", "application/pdf")
    assert AttachmentRef.decode(attachment.ref) == AttachmentRef(
        message_id="om_1", key="file_1", kind="file"
    )
    assert translator.message(message_event(message_type="sticker", content={"k": 1})) is None


def test_post_is_flattened_to_markdown() -> None:
    content = {
        "title": "Plan",
        "content": [
            [{"tag": "text", "text": "bold", "style": ["bold"]}, {"tag": "text", "text": " and "},
             {"tag": "a", "href": "https://x.example", "text": "link"}],
            [{"tag": "at", "user_id": "@_user_1", "user_name": "Bot"},
             {"tag": "text", "text": " go"}],
            [{"tag": "img", "image_key": "img_9"}],
            [{"tag": "code_block", "language": "python", "text": "print(1)\n"}],
        ],
    }  # fmt: skip
    text, images = flatten_post(content)
    assert text.startswith("**Plan**\n**bold** and [link](https://x.example)\n@_user_1 go")
    assert "```python\nprint(1)\n```" in text
    assert images == ("img_9",)
    event = message_event(
        message_type="post", content=content, mentions=[mention("@_user_1", "ou_bot", "Bot")]
    )
    message = Translator(ME).message(event)
    assert message is not None
    assert message.mentions_bot
    assert "go" in message.text
    assert "@_user_1" not in message.text
    assert [a.kind for a in message.attachments] == [AttachmentKind.IMAGE]
    assert flatten_post({"en_us": {"content": [[{"tag": "md", "text": "# hi"}]]}}) == ("# hi", ())


def test_a_card_press_carries_the_payload_and_its_place() -> None:
    value = {"switchboard": "clar/1/0", "label": "Yes", "chat_type": "dm", "topic": ""}
    payload: dict[str, Any] = {
        "schema": "2.0",
        "header": {"event_id": "e9", "event_type": "card.action.trigger"},
        "event": {
            "operator": {"open_id": "ou_user", "tenant_key": "t1"},
            "token": "c-1",
            "action": {"value": value, "tag": "button"},
            "context": {"open_message_id": "om_q", "open_chat_id": "oc_chat"},
        },
    }
    decoded = Translator(ME).decode(payload)
    assert decoded is not None
    assert decoded.press is not None
    message = decoded.message
    assert message.button is not None
    assert (message.button.payload, message.button.message_id) == ("clar/1/0", "om_q")
    assert (message.chat_type, message.message_id, message.text) == (
        ChatType.DM,
        "card/om_q/c-1",
        "Yes",
    )
    payload["event"]["action"]["value"] = {"other": "x"}
    assert Translator(ME).decode(payload) is None


def test_other_event_types_are_nothing_for_the_kernel() -> None:
    assert (
        Translator(ME).decode({"schema": "2.0", "header": {"event_type": "im.chat.updated_v1"}})
        is None
    )


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("status", "code", "kind"),
    [
        (429, 99991400, SendErrorKind.RATE_LIMITED),
        (400, 99991663, SendErrorKind.AUTH_FAILED),
        (400, 10014, SendErrorKind.AUTH_FAILED),
        (400, 230002, SendErrorKind.FORBIDDEN),
        (400, 230099, SendErrorKind.INVALID_REQUEST),
        (400, 230025, SendErrorKind.INVALID_REQUEST),
        (400, 230001, SendErrorKind.INVALID_REQUEST),
        (500, 2200, SendErrorKind.TRANSIENT),
        (502, 0, SendErrorKind.TRANSIENT),
    ],
)
def test_error_codes_map_to_kinds(status: int, code: int, kind: SendErrorKind) -> None:
    assert translate(status, code, "msg", {}).kind is kind


def test_rate_limits_wait_the_reset_header() -> None:
    error = translate(429, 99991400, "limit", {"x-ogw-ratelimit-reset": "3"})
    assert isinstance(error, RateLimited)
    assert error.retry_after == 3.0


def test_a_recalled_message_is_gone_not_unreachable() -> None:
    error = translate(400, 230011, "The message is recalled.", {})
    assert isinstance(error, MessageGone)
    assert error.kind is SendErrorKind.INVALID_REQUEST
    assert not isinstance(error, Forbidden | AuthFailed | TransientSendError)


@pytest.mark.parametrize(
    ("name", "kind"),
    [("a.pdf", "pdf"), ("b.DOCX", "doc"), ("c.xlsx", "xls"), ("d.mp4", "mp4"), ("e.csv", "stream")],
)
def test_file_types_by_extension(name: str, kind: str) -> None:
    assert file_type_for(name) == kind


# --------------------------------------------------------------------------- config


def write_config(tmp_path: Path, domain: str) -> Path:
    path = tmp_path / "switchboard.yaml"
    path.write_text(
        "config_version: 1\n"
        f"state_dir: {tmp_path}\n"
        "channels:\n"
        "  feishu:\n"
        "    enabled: true\n"
        "    app_id: cli_x\n"
        "    app_secret: s\n"
        f"    domain: {domain}\n",
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize(
    "domain",
    [
        "https://open.feishu.cn/",
        "https://open.feishu.cn/open-apis",
        "http://example.com",
        "ftp://x",
    ],
)
def test_a_bad_domain_is_a_config_error_naming_the_key(tmp_path: Path, domain: str) -> None:
    with pytest.raises(ConfigError, match=r"channels\.feishu\.domain"):
        load_settings(write_config(tmp_path, domain), environ={})


@pytest.mark.parametrize(
    "domain", ["https://open.larksuite.com", "http://127.0.0.1:8080", "http://localhost:1"]
)
def test_origins_and_loopback_http_are_accepted(tmp_path: Path, domain: str) -> None:
    settings = load_settings(write_config(tmp_path, domain), environ={})
    assert settings.channels.feishu.domain == domain
