"""The fake Telegram Bot API itself, driven by the real python-telegram-bot and by raw HTTP.

The adapter's tests are only as good as this fake is strict, so these pin down the wire rules
it enforces (design §17.1) and the test-side API (waiting, fault injection, webhooks).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
import telegram
from aiohttp import web
from telegram import (
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    MessageEntity,
    ReactionTypeEmoji,
    ReplyParameters,
)
from telegram.error import BadRequest, Conflict, Forbidden, InvalidToken, NetworkError, RetryAfter
from telegram.ext import ApplicationBuilder, MessageHandler, filters

from tests.fakes.telegram_api import SECRET_HEADER, TINY_PNG, CallbackAnswer, FakeTelegram

EMOJI = "😀"  # two UTF-16 code units
MB = 1024 * 1024
SECRET = "s3cret-of-the-webhook"  # noqa: S105 - a test webhook secret


@pytest.fixture(autouse=True)
def _timedelta_periods(monkeypatch: pytest.MonkeyPatch) -> None:
    """PTB 22 warns on int time periods (RetryAfter.retry_after) unless this is opted in."""
    monkeypatch.setenv("PTB_TIMEDELTA", "true")


@pytest.fixture
def fake() -> Iterator[FakeTelegram]:
    with FakeTelegram() as server:
        yield server


@pytest.fixture
async def bot(fake: FakeTelegram) -> AsyncIterator[telegram.Bot]:
    client = telegram.Bot(fake.token, base_url=fake.base_url, base_file_url=fake.base_file_url)
    async with client:
        yield client


@pytest.fixture
async def raw(fake: FakeTelegram) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=f"{fake.api_origin}/bot{fake.token}/") as client:
        yield client


# --------------------------------------------------------------------------- identity, polling


async def test_get_me_identifies_the_bot(fake: FakeTelegram, bot: telegram.Bot) -> None:
    assert (bot.id, bot.username) == (999, "fake_bot")
    assert [call.method for call in fake.calls()] == ["getMe"]
    assert fake.base_url == f"{fake.api_origin}/bot"


async def test_update_pushed_during_a_long_poll_is_returned_promptly(
    fake: FakeTelegram, bot: telegram.Bot
) -> None:
    poll = asyncio.create_task(bot.get_updates(timeout=10))
    await fake.await_call("getUpdates")
    started = time.monotonic()
    fake.push_message("hello")
    updates = await asyncio.wait_for(poll, 2)
    assert time.monotonic() - started < 1.0
    assert [u.message.text for u in updates if u.message] == ["hello"]


async def test_offset_confirms_and_redeliver_offers_again(
    fake: FakeTelegram, bot: telegram.Bot
) -> None:
    first = fake.push_message("one")["update_id"]
    assert [u.update_id for u in await bot.get_updates(timeout=0)] == [first]
    assert [u.update_id for u in await bot.get_updates(timeout=0)] == [first]  # unconfirmed
    assert await bot.get_updates(offset=first + 1, timeout=0) == ()
    assert await bot.get_updates(offset=0, timeout=0) == ()  # confirmation is permanent
    fake.redeliver(first)
    again = await bot.get_updates(offset=first + 1, timeout=0)
    assert [(u.update_id, u.message and u.message.text) for u in again] == [(first, "one")]
    assert await bot.get_updates(offset=first + 1, timeout=0) == ()  # offered once


async def test_limit_and_negative_offset(fake: FakeTelegram, bot: telegram.Bot) -> None:
    ids = [fake.push_message(f"m{n}")["update_id"] for n in range(4)]
    assert [u.update_id for u in await bot.get_updates(limit=2, timeout=0)] == ids[:2]
    assert [u.update_id for u in await bot.get_updates(offset=-1, timeout=0)] == ids[-1:]


async def test_a_newer_poll_terminates_the_older_one(
    fake: FakeTelegram, raw: httpx.AsyncClient
) -> None:
    older = asyncio.create_task(raw.post("getUpdates", data={"timeout": "10"}))
    await fake.await_call("getUpdates")
    newer = await raw.post("getUpdates", data={"timeout": "0"})
    answer = await asyncio.wait_for(older, 2)
    assert (newer.status_code, answer.status_code) == (200, 409)
    assert answer.json()["description"].startswith("Conflict: terminated by other getUpdates")


async def test_stopping_answers_a_pending_long_poll(fake: FakeTelegram) -> None:
    async with httpx.AsyncClient() as client:
        url = f"{fake.base_url}{fake.token}/getUpdates"
        poll = asyncio.create_task(client.post(url, data={"timeout": "30"}))
        await fake.await_call("getUpdates")
        started = time.monotonic()
        await asyncio.to_thread(fake.stop)
        response = await asyncio.wait_for(poll, 2)
    assert time.monotonic() - started < 2.0
    assert response.json() == {"ok": True, "result": []}


async def test_ptb_updater_echoes_and_stops_quickly(fake: FakeTelegram) -> None:
    async def echo(update: telegram.Update, _: object) -> None:
        assert update.effective_message is not None
        await update.effective_message.reply_text(
            f"echo: {update.effective_message.text}", do_quote=True
        )

    app = (
        ApplicationBuilder()
        .token(fake.token)
        .base_url(fake.base_url)
        .base_file_url(fake.base_file_url)
        .build()
    )
    app.add_handler(MessageHandler(filters.TEXT, echo))
    async with app:
        await app.start()
        assert app.updater is not None
        await app.updater.start_polling(poll_interval=0, timeout=dt.timedelta(seconds=10))
        fake.push_message("ping")
        reply = await fake.await_call("sendMessage")
        assert fake.chat_messages(42)[-1]["text"] == "echo: ping"  # seen with its effect
        started = time.monotonic()
        await app.updater.stop()
        await app.stop()
    assert time.monotonic() - started < 2.0
    assert reply.params["text"] == "echo: ping"
    assert json.loads(reply.params["reply_parameters"])["message_id"] == 1000
    assert fake.calls("getUpdates")[-1].params["timeout"] == "0"  # the confirming last poll
    assert [c.method for c in fake.calls()][:2] == ["getMe", "deleteWebhook"]


# --------------------------------------------------------------------------- sending text


async def test_message_ids_count_per_chat_from_1000(fake: FakeTelegram, bot: telegram.Bot) -> None:
    fake.push_message("hi", chat_id=42)
    fake.push_message("hi", chat_id=-100, chat_type="group", user_id=7)
    sent = [await bot.send_message(chat, "ok") for chat in (42, 42, -100)]
    assert [m.message_id for m in sent] == [1001, 1002, 1001]
    assert sent[0].from_user is not None
    assert sent[0].from_user.id == fake.bot_id
    assert [m["text"] for m in fake.chat_messages(42)] == ["ok", "ok"]


async def test_unknown_chats_and_users(fake: FakeTelegram, bot: telegram.Bot) -> None:
    fake.push_message("in a group", chat_id=-5, chat_type="group", user_id=77)
    with pytest.raises(BadRequest, match="Chat not found"):
        await bot.send_message(12345, "hello?")
    with pytest.raises(Forbidden, match="can't initiate conversation"):
        await bot.send_message(77, "hello?")  # a known user, but no private chat


async def test_text_limit_counts_utf16_units(fake: FakeTelegram, bot: telegram.Bot) -> None:
    fake.push_message("hi")
    for fits in ("a" * 4094 + EMOJI, EMOJI * 2048):
        assert (await bot.send_message(42, fits)).text == fits
    tagged = await bot.send_message(42, f"<b>{'a' * 4096}</b>", parse_mode="HTML")
    assert tagged.text == "a" * 4096  # the limit applies after entity parsing
    for too_long in ("a" * 4095 + EMOJI, EMOJI * 2048 + "a"):
        with pytest.raises(BadRequest, match="Message is too long"):
            await bot.send_message(42, too_long)


async def test_empty_text_after_parsing_is_refused(fake: FakeTelegram, bot: telegram.Bot) -> None:
    fake.push_message("hi")
    with pytest.raises(BadRequest, match="Message text is empty"):
        await bot.send_message(42, "<b> </b>", parse_mode="HTML")


async def test_valid_nested_html_becomes_entities(fake: FakeTelegram, bot: telegram.Bot) -> None:
    fake.push_message("hi")
    html = (
        '<b>bold <i>both</i></b> <a href="https://example.org">link</a> '
        '<pre><code class="language-python">x = 1</code></pre> <tg-spoiler>s</tg-spoiler> '
        "<blockquote expandable>q</blockquote> &lt;tag&gt; AT&T 1 > 0 " + EMOJI + "<u>u</u>"
    )
    sent = await bot.send_message(42, html, parse_mode="HTML")
    assert sent.text == f"bold both link x = 1 s q <tag> AT&T 1 > 0 {EMOJI}u"
    found = {(e.type, sent.parse_entity(e)) for e in sent.entities}
    assert found >= {("bold", "bold both"), ("italic", "both"), ("text_link", "link")}
    assert {("pre", "x = 1"), ("spoiler", "s"), ("underline", "u")} <= found
    assert ("expandable_blockquote", "q") in found
    pre = next(e for e in sent.entities if e.type == "pre")
    assert pre.language == "python"


@pytest.mark.parametrize(
    ("html", "why"),
    [
        ("<b>unclosed", 'Can\'t find end tag corresponding to start tag "b"'),
        ("<div>x</div>", 'Unsupported start tag "div" at byte offset 0'),
        ("1 < 2", 'Unsupported start tag "" at byte offset 2'),
        ("<b><i>x</b></i>", 'Unmatched end tag at byte offset 7, expected "</i>", found "</b>"'),
        ("x</b>", "Unexpected end tag at byte offset 1"),
        ('<span class="x">s</span>', 'Tag "span" must have class "tg-spoiler"'),
    ],
)
async def test_invalid_html_cannot_be_parsed(
    fake: FakeTelegram, bot: telegram.Bot, html: str, why: str
) -> None:
    fake.push_message("hi")
    with pytest.raises(BadRequest, match="Can't parse entities") as caught:
        await bot.send_message(42, html, parse_mode="HTML")
    assert why.lower() in caught.value.message.lower()  # PTB lower-cases what follows


async def test_markdown_v2_reserved_characters(fake: FakeTelegram, bot: telegram.Bot) -> None:
    fake.push_message("hi")
    with pytest.raises(BadRequest, match=r"character '\.' is reserved"):
        await bot.send_message(42, "Done.", parse_mode="MarkdownV2")
    with pytest.raises(BadRequest, match="can't find end of bold entity"):
        await bot.send_message(42, "*bold", parse_mode="MarkdownV2")
    sent = await bot.send_message(
        42, r"*bold* _it_ `a.b` [x](https://e.org/a\)b) 1\+1\=2\.", parse_mode="MarkdownV2"
    )
    assert sent.text == "bold it a.b x 1+1=2."
    kinds = [(e.type, sent.parse_entity(e)) for e in sent.entities]
    assert kinds == [("bold", "bold"), ("italic", "it"), ("code", "a.b"), ("text_link", "x")]
    assert sent.entities[-1].url == "https://e.org/a)b"


async def test_entities_must_lie_within_the_text(fake: FakeTelegram, bot: telegram.Bot) -> None:
    fake.push_message("hi")
    bold = MessageEntity(type="bold", offset=0, length=2)
    sent = await bot.send_message(42, EMOJI + "!", entities=[bold])
    assert sent.parse_entity(sent.entities[0]) == EMOJI
    with pytest.raises(BadRequest, match="beyond the end of the text"):
        await bot.send_message(42, EMOJI, entities=[MessageEntity(type="bold", offset=1, length=2)])


async def test_unsupported_parse_mode(fake: FakeTelegram, bot: telegram.Bot) -> None:
    fake.push_message("hi")
    with pytest.raises(BadRequest, match="Unsupported parse_mode"):
        await bot.send_message(42, "x", parse_mode="BBCode")


# --------------------------------------------------------------------------- replies, topics, edits


async def test_replies_and_forum_topics(fake: FakeTelegram, bot: telegram.Bot) -> None:
    pushed = fake.push_message(
        "q", chat_id=-100, chat_type="supergroup", is_forum=True, message_thread_id=7
    )
    asked = pushed["message"]["message_id"]
    reply = await bot.send_message(-100, "a", reply_parameters=ReplyParameters(asked))
    assert reply.message_thread_id == 7  # a reply joins the topic of what it answers
    assert reply.reply_to_message is not None
    assert reply.reply_to_message.message_id == asked
    assert (await bot.send_message(-100, "b", message_thread_id=7)).is_topic_message
    with pytest.raises(BadRequest, match="Message thread not found"):
        await bot.send_message(-100, "c", message_thread_id=8)
    with pytest.raises(BadRequest, match="Message to be replied not found"):
        await bot.send_message(-100, "d", reply_to_message_id=5)
    lenient = ReplyParameters(5, allow_sending_without_reply=True)
    assert (await bot.send_message(-100, "e", reply_parameters=lenient)).reply_to_message is None
    fake.push_message("plain group", chat_id=-200, chat_type="supergroup", user_id=8)
    with pytest.raises(BadRequest, match="Message thread not found"):
        await bot.send_message(-200, "f", message_thread_id=7)


async def test_reply_to_the_bot_carries_the_bot_message(
    fake: FakeTelegram, bot: telegram.Bot
) -> None:
    fake.push_message("hi")
    sent = await bot.send_message(42, "answer")
    update = fake.push_message("follow-up", reply_to_message_id=sent.message_id)
    parsed = telegram.Update.de_json(update, bot)
    assert parsed.message is not None
    replied = parsed.message.reply_to_message
    assert replied is not None
    assert replied.from_user is not None
    assert (replied.from_user.id, replied.text) == (fake.bot_id, "answer")
    with pytest.raises(ValueError, match="unknown in chat 42"):
        fake.push_message("reply to nothing", reply_to_message_id=1)


async def test_edits_and_not_modified(fake: FakeTelegram, bot: telegram.Bot) -> None:
    fake.push_message("hi")
    sent = await bot.send_message(42, "draft")
    with pytest.raises(BadRequest, match="Message is not modified"):
        await bot.edit_message_text("draft", chat_id=42, message_id=sent.message_id)
    keyboard = InlineKeyboardMarkup([[InlineKeyboardButton("Yes", callback_data="c:yes")]])
    await bot.edit_message_text("draft", chat_id=42, message_id=sent.message_id,
                                reply_markup=keyboard)  # fmt: skip
    with pytest.raises(BadRequest, match="Message is not modified"):
        await bot.edit_message_reply_markup(42, sent.message_id, reply_markup=keyboard)
    await bot.edit_message_text("<b>final</b>", chat_id=42, message_id=sent.message_id,
                                parse_mode="HTML")  # fmt: skip
    [current] = fake.chat_messages(42)
    assert current["text"] == "final"
    assert "reply_markup" not in current  # an edit without reply_markup drops the keyboard
    assert current["entities"] == [{"type": "bold", "offset": 0, "length": 5}]
    with pytest.raises(BadRequest, match="Message to edit not found"):
        await bot.edit_message_text("x", chat_id=42, message_id=4242)
    with pytest.raises(BadRequest, match="Message can't be edited"):
        await bot.edit_message_text("x", chat_id=42, message_id=1000)  # the user's message


async def test_delete_message(fake: FakeTelegram, bot: telegram.Bot) -> None:
    fake.push_message("hi")
    sent = await bot.send_message(42, "oops")
    assert await bot.delete_message(42, sent.message_id)
    assert fake.chat_messages(42) == []
    with pytest.raises(BadRequest, match="Message to delete not found"):
        await bot.delete_message(42, sent.message_id)


async def test_inline_buttons_and_callback_queries(fake: FakeTelegram, bot: telegram.Bot) -> None:
    fake.push_message("hi")
    keyboard = InlineKeyboardMarkup([[InlineKeyboardButton("A", callback_data="opt:a")]])
    sent = await bot.send_message(42, "pick", reply_markup=keyboard)
    too_long = InlineKeyboardMarkup([[InlineKeyboardButton("B", callback_data="x" * 65)]])
    with pytest.raises(BadRequest, match="Button_data_invalid"):
        await bot.send_message(42, "pick", reply_markup=too_long)
    pressed = fake.push_callback_query(data="opt:a", chat_id=42, message_id=sent.message_id)
    [_, update] = await bot.get_updates(timeout=0)
    query = update.callback_query
    assert query is not None
    assert (query.id, query.data) == (pressed["callback_query"]["id"], "opt:a")
    assert query.message is not None
    assert query.message.message_id == sent.message_id
    with pytest.raises(BadRequest, match="Message_too_long"):
        await bot.answer_callback_query(query.id, text="x" * 201, show_alert=True)
    assert await bot.answer_callback_query(query.id, text="🚫" * 100, show_alert=True)
    with pytest.raises(BadRequest, match="Query is too old"):
        await bot.answer_callback_query(query.id)
    assert fake.callback_answers() == {query.id: CallbackAnswer(text="🚫" * 100, show_alert=True)}


async def test_actions_reactions_and_commands(fake: FakeTelegram, bot: telegram.Bot) -> None:
    asked = fake.push_message("hi")["message"]["message_id"]
    assert await bot.send_chat_action(42, "typing")
    assert await bot.set_message_reaction(42, asked, "👍")
    assert await bot.set_my_commands([("new", "Start a new conversation")])
    assert [c.command for c in await bot.get_my_commands()] == ["new"]
    with pytest.raises(BadRequest, match="Wrong parameter action"):
        await bot.send_chat_action(42, "dancing")
    for not_allowed in ("🚀", ReactionTypeEmoji("🚀")):  # PTB sends a str as a custom emoji
        with pytest.raises(BadRequest, match="Reaction_invalid"):
            await bot.set_message_reaction(42, asked, not_allowed)
    with pytest.raises(BadRequest, match="Bot_command_invalid"):
        await bot.set_my_commands([("New", "capitalised")])
    with pytest.raises(BadRequest, match="Command description must be non-empty"):
        await bot.set_my_commands([("new", " ")])
    assert json.loads(fake.calls("setMessageReaction")[0].params["reaction"]) == [
        {"type": "emoji", "emoji": "👍"}
    ]


# --------------------------------------------------------------------------- errors and faults


async def test_429_raises_retry_after_with_its_delay(fake: FakeTelegram, bot: telegram.Bot) -> None:
    fake.push_message("hi")
    fake.fail_next("sendMessage", status=429, description="Too Many Requests: retry after 3",
                   retry_after=3)  # fmt: skip
    with pytest.raises(RetryAfter) as caught:
        await bot.send_message(42, "x")
    assert caught.value.retry_after == dt.timedelta(seconds=3)
    assert (await bot.send_message(42, "x")).text == "x"  # the fault was used up
    assert len(fake.calls("sendMessage")) == 2  # the refused call was recorded too


@pytest.mark.parametrize(
    ("status", "description", "error"),
    [
        (403, "Forbidden: bot was blocked by the user", Forbidden),
        (401, "Unauthorized", InvalidToken),
        (400, "Bad Request: chat not found", BadRequest),
        (409, "Conflict: terminated by other getUpdates request", Conflict),
        (500, "Internal Server Error", NetworkError),
    ],
)
async def test_injected_errors_map_to_ptb_exceptions(
    fake: FakeTelegram,
    bot: telegram.Bot,
    status: int,
    description: str,
    error: type[Exception],
) -> None:
    fake.push_message("hi")
    fake.fail_next("sendMessage", status=status, description=description, times=2)
    for _ in range(2):
        with pytest.raises(error):
            await bot.send_message(42, "x")
    await bot.send_message(42, "x")


async def test_revoked_token_answers_401_everywhere(fake: FakeTelegram) -> None:
    fake.set_token_valid(False)
    client = telegram.Bot(fake.token, base_url=fake.base_url, base_file_url=fake.base_file_url)
    with pytest.raises(InvalidToken):
        await client.initialize()
    await client.shutdown()
    fake.set_token_valid(True)
    async with client:
        assert client.username == "fake_bot"


async def test_delay_next_slows_one_answer(fake: FakeTelegram, bot: telegram.Bot) -> None:
    fake.delay_next("getMe", 0.3)
    started = time.monotonic()
    await bot.get_me()
    assert time.monotonic() - started >= 0.3
    started = time.monotonic()
    await bot.get_me()
    assert time.monotonic() - started < 0.3


async def test_wire_strictness(fake: FakeTelegram, raw: httpx.AsyncClient) -> None:
    fake.push_message("hi")
    as_json = await raw.post("sendMessage", json={"chat_id": 42, "text": "x"})
    assert as_json.status_code == 400
    assert "application/json body refused" in as_json.json()["description"]
    assert (await raw.get("getMe")).status_code == 400
    assert (await raw.post("sendMessage", data={"chat_id": "42", "text": "x"})).status_code == 200
    assert (await raw.post("SENDMESSAGE", data={"chat_id": "42", "text": "y"})).status_code == 200
    unknown = await raw.post("sendSticker", data={"chat_id": "42"})
    assert (unknown.status_code, unknown.json()["description"]) == (404, "Not Found")
    async with httpx.AsyncClient() as other:
        wrong = await other.post(f"{fake.base_url}123456:WRONG/getMe")
    assert wrong.json() == {"ok": False, "error_code": 401, "description": "Unauthorized"}
    assert [c.method for c in fake.calls("sendMessage")] == ["sendMessage"] * 3


def test_wait_for_call_names_what_it_saw(fake: FakeTelegram) -> None:
    fake.push_message("hi")
    with httpx.Client(base_url=f"{fake.base_url}{fake.token}/") as client:
        client.post("sendMessage", data={"chat_id": "42", "text": "hello"})
    assert fake.wait_for_call("sendMessage").params["text"] == "hello"
    with pytest.raises(AssertionError) as caught:
        fake.wait_for_call("sendMessage", lambda c: c.params.get("text") == "bye", timeout=0.1)
    message = str(caught.value)
    assert "expected 1 sendMessage call(s) matching the predicate within 0.1 s" in message
    assert "sendMessage(chat_id='42', text='hello')" in message


async def test_blocking_waits_refuse_the_running_loop(fake: FakeTelegram) -> None:
    with pytest.raises(RuntimeError, match=r"await fake\.await_call"):
        fake.wait_for_call("getMe", timeout=0)


# --------------------------------------------------------------------------- files


async def test_uploads_are_recorded_with_their_bytes(fake: FakeTelegram, bot: telegram.Bot) -> None:
    fake.push_message("hi")
    sent = await bot.send_document(42, b"# notes\n", filename="answer.md", caption="<i>doc</i>",
                                   parse_mode="HTML")  # fmt: skip
    call = fake.calls("sendDocument")[0]
    assert call.files == {"document": b"# notes\n"}
    assert call.filenames == {"document": "answer.md"}
    assert sent.document is not None
    assert sent.document.file_name == "answer.md"
    assert (sent.caption, sent.caption_entities[0].type) == ("doc", "italic")
    photo = await bot.send_photo(42, TINY_PNG)
    assert photo.photo[-1].width == 1
    with pytest.raises(BadRequest, match="Image_process_failed"):
        await bot.send_photo(42, b"not an image")
    with pytest.raises(BadRequest, match="Photo_invalid_dimensions"):
        await bot.send_photo(42, TINY_PNG + bytes(10 * MB))
    with pytest.raises(BadRequest, match="File must be non-empty"):
        await bot.send_document(42, b"", filename="empty.txt")
    again = await bot.send_document(42, sent.document.file_id)  # resend by file_id
    assert again.document is not None
    assert again.document.file_id == sent.document.file_id


async def test_get_file_and_download(fake: FakeTelegram, bot: telegram.Bot) -> None:
    fake.add_file("doc-1", b"payload bytes")
    file = await bot.get_file("doc-1")
    assert file.file_size == 13
    assert bytes(await file.download_as_bytearray()) == b"payload bytes"
    assert fake.calls("downloadFile")[0].params["file_path"] == "tgfake/documents/file_1"
    with pytest.raises(BadRequest, match="Invalid file_id"):
        await bot.get_file("nope")
    fake.add_file("huge", bytes(20 * MB + 1))
    with pytest.raises(BadRequest, match="File is too big"):
        await bot.get_file("huge")


async def test_pushed_media_messages(fake: FakeTelegram, bot: telegram.Bot) -> None:
    fake.add_file("small", TINY_PNG)
    fake.add_file("big", TINY_PNG)
    fake.add_file("report", b"%PDF-1.4")
    fake.push_message(caption="look", photo_file_ids=["small", "big"])
    fake.push_message(document_file_id="report", document_name="report.pdf")
    fake.push_message(voice_file_id="report")
    photo, document, voice = (u.message for u in await bot.get_updates(timeout=0))
    assert photo is not None
    assert (photo.caption, photo.photo[-1].file_id) == ("look", "big")  # largest last
    assert document is not None
    assert document.document is not None
    assert document.document.file_name == "report.pdf"
    assert document.document.mime_type == "application/pdf"
    assert voice is not None
    assert voice.voice is not None
    assert voice.voice.file_size == 8


# --------------------------------------------------------------------------- webhook


async def test_webhook_delivery_with_secret(fake: FakeTelegram, bot: telegram.Bot) -> None:
    received: list[tuple[str, str | None, dict[str, object]]] = []

    async def receive(request: web.Request) -> web.Response:
        secret = request.headers.get(SECRET_HEADER)
        received.append((request.headers["Content-Type"], secret, await request.json()))
        return web.Response(status=200 if secret == SECRET else 403)

    app = web.Application()
    app.router.add_post("/hook", receive)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        url = f"http://127.0.0.1:{runner.addresses[0][1]}/hook"
        assert await bot.set_webhook(url, secret_token=SECRET)
        update_id = fake.push_message("via webhook")["update_id"]
        assert await fake.await_deliveries(1) == [(update_id, 200)]
        assert received[0][:2] == ("application/json", SECRET)
        assert received[0][2]["message"]["text"] == "via webhook"  # type: ignore[index]
        with pytest.raises(Conflict, match="webhook is active"):
            await bot.get_updates(timeout=0)
        assert await fake.apush_raw_webhook(b"{}", secret="wrong") == 403  # noqa: S106
        assert await fake.apush_raw_webhook(b"{}", secret=None) == 403
        fake.redeliver(update_id)
        assert (await fake.await_deliveries(2))[1] == (update_id, 200)
        assert await bot.delete_webhook()
        assert await bot.get_updates(timeout=0) == ()  # delivered means confirmed
    finally:
        await runner.cleanup()


async def test_allowed_updates_filters_kinds(fake: FakeTelegram, bot: telegram.Bot) -> None:
    fake.push_message("hi")
    sent = await bot.send_message(42, "pick")
    fake.push_callback_query(data="x", chat_id=42, message_id=sent.message_id)
    fake.push_update({"message_reaction": {"chat": {"id": 42, "type": "private"}}})
    only_messages = await bot.get_updates(timeout=0, allowed_updates=["message"])
    assert [u.message is not None for u in only_messages] == [True]  # the press is gone
    fake.push_callback_query(data="y", chat_id=42, message_id=sent.message_id)
    again = await bot.get_updates(timeout=0)  # the setting is remembered
    assert [u.update_id for u in again] == [u.update_id for u in only_messages]
    await bot.get_updates(timeout=0, allowed_updates=[])  # back to the default kinds
    fake.push_callback_query(data="z", chat_id=42, message_id=sent.message_id)
    latest = await bot.get_updates(timeout=0)
    assert [u.callback_query.data for u in latest if u.callback_query] == ["z"]


# --------------------------------------------------------------------------- load-balanced webhook


class Replica:
    """One daemon replica's webhook route on its own port: records ``(update_id, secret)``
    per post and answers ``status``; ``reset`` drops the connection instead (a kill -9)."""

    def __init__(self) -> None:
        self.status = 200
        self.reset = False
        self.got: list[tuple[int, str | None]] = []
        app = web.Application()
        app.router.add_post("/telegram/webhook", self._receive)
        self._runner = web.AppRunner(app, access_log=None)
        self.url = ""

    async def start(self) -> Replica:
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}/telegram/webhook"
        return self

    async def stop(self) -> None:
        """Closes the port: posts to ``url`` are refused from now on."""
        await self._runner.cleanup()

    def ids(self) -> list[int]:
        return [update_id for update_id, _ in self.got]

    async def _receive(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.got.append((body["update_id"], request.headers.get(SECRET_HEADER)))
        if self.reset:
            assert request.transport is not None
            request.transport.abort()
        return web.Response(status=self.status)


@pytest.fixture
async def replicas() -> AsyncIterator[list[Replica]]:
    started = [await Replica().start() for _ in range(4)]
    try:
        yield started
    finally:
        for replica in started:
            await replica.stop()


@pytest.fixture
def quick_retries(fake: FakeTelegram) -> FakeTelegram:
    fake.webhook_retry_s = 0.01  # the rotation is per try, so the pause does not change routes
    return fake


def _push(fake: FakeTelegram, count: int) -> list[int]:
    return [fake.push_message(f"m{n}")["update_id"] for n in range(count)]


async def test_balanced_webhook_round_robins_over_replicas(
    fake: FakeTelegram, bot: telegram.Bot, replicas: list[Replica]
) -> None:
    direct, *behind = replicas
    assert await bot.set_webhook(direct.url, secret_token=SECRET)
    fake.balance_webhook([r.url for r in behind])
    ids = _push(fake, 7)
    urls = [behind[n % 3].url for n in range(7)]
    assert await fake.await_balanced_deliveries(7) == list(zip(ids, urls, strict=True))
    assert fake.webhook_deliveries() == [(update_id, 200) for update_id in ids]
    assert [r.ids() for r in behind] == [ids[0::3], ids[1::3], ids[2::3]]
    assert all(secret == SECRET for r in behind for _, secret in r.got)
    assert direct.got == []
    fake.balance_webhook(None)  # off: the setWebhook URL again
    [last] = _push(fake, 1)
    assert (await fake.await_deliveries(8))[-1] == (last, 200)
    assert direct.ids() == [last]
    assert len(fake.balanced_deliveries()) == 7
    with pytest.raises(ValueError, match="not an HTTP"):
        fake.balance_webhook(["ftp://127.0.0.1/hook"])


async def test_balanced_webhook_skips_down_and_failing_replicas(
    quick_retries: FakeTelegram, bot: telegram.Bot, replicas: list[Replica]
) -> None:
    fake = quick_retries
    ok, failing, other, down = replicas
    failing.status = 500
    await down.stop()
    assert await bot.set_webhook(ok.url, secret_token=SECRET)
    fake.balance_webhook([ok.url, failing.url, other.url, down.url])
    ids = _push(fake, 5)
    accepted = await fake.await_balanced_deliveries(5)
    # tries: 1->ok; 2->failing, other; 3->down, ok; 4->failing, other; 5->down, ok
    assert accepted == list(zip(ids, [ok.url, other.url, ok.url, other.url, ok.url], strict=True))
    assert [update_id for update_id, _ in accepted] == ids  # order kept
    assert fake.webhook_deliveries() == [
        (ids[0], 200),
        *[(ids[1], 500), (ids[1], 200), (ids[2], 0), (ids[2], 200)],
        *[(ids[3], 500), (ids[3], 200), (ids[4], 0), (ids[4], 200)],
    ]
    assert (ok.ids(), failing.ids(), other.ids()) == (ids[0::2], ids[1::2], ids[1::2])


async def test_balanced_webhook_moves_updates_off_a_killed_replica(
    quick_retries: FakeTelegram, bot: telegram.Bot, replicas: list[Replica]
) -> None:
    fake = quick_retries
    first, second, third, _ = replicas
    assert await bot.set_webhook(first.url, secret_token=SECRET)
    fake.balance_webhook([first.url, second.url, third.url])
    before = _push(fake, 3)
    await fake.await_balanced_deliveries(3)
    second.reset = True  # killed while answering: the connection drops mid-request
    after = _push(fake, 2)
    accepted = await fake.await_balanced_deliveries(5)
    assert accepted[3:] == [(after[0], first.url), (after[1], third.url)]
    assert fake.webhook_deliveries()[3:] == [(after[0], 200), (after[1], 0), (after[1], 200)]
    await second.stop()  # and gone: its kept-alive connection and its port
    again = _push(fake, 2)
    accepted = await fake.await_balanced_deliveries(7)
    assert accepted[5:] == [(again[0], first.url), (again[1], third.url)]
    assert fake.webhook_deliveries()[6:] == [(again[0], 200), (again[1], 0), (again[1], 200)]
    assert second.ids() == [before[1], after[1]]


async def test_balanced_webhook_never_gives_an_update_up(
    quick_retries: FakeTelegram, bot: telegram.Bot, replicas: list[Replica]
) -> None:
    fake = quick_retries
    failing, down, *_ = replicas
    failing.status = 503
    await down.stop()
    assert await bot.set_webhook(failing.url, secret_token=SECRET)
    fake.balance_webhook([failing.url, down.url])
    [update_id] = _push(fake, 1)
    tries = fake.webhook_max_attempts * 3
    failed = await fake.await_deliveries(tries)
    assert failed[:4] == [(update_id, 503), (update_id, 0), (update_id, 503), (update_id, 0)]
    failing.status = 200  # a replica is healthy again: the update was kept for it
    assert await fake.await_balanced_deliveries(1) == [(update_id, failing.url)]
    assert fake.webhook_deliveries()[-1] == (update_id, 200)
    assert set(failing.ids()) == {update_id}
