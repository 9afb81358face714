"""Markdown → Telegram entities, error classification and the group window (design §8)."""

from __future__ import annotations

import pytest
from telegram import error as tg

from bot.errors import MessageGone, SendErrorKind
from bot.messages import RenderMode
from bot.ports import TextUnit
from channels.telegram import TELEGRAM_CAPABILITIES
from channels.telegram.errors import NotModified, translate
from channels.telegram.render import INLINE_CHARS, MAX_DEPTH, Rendered, render, render_async


def _utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def test_reserved_characters_need_no_escaping_with_entities() -> None:
    source = "Price: *1.5* x 2 = 3! (approx) [not a link] a_b `x_y` #tag {ok} |pipe| ~tilde."
    body = render(source, RenderMode.RICH)
    assert body.text == "Price: 1.5 x 2 = 3! (approx) [not a link] a_b x_y #tag {ok} |pipe| ~tilde."
    assert [(e.type, body.text[e.offset : e.offset + e.length]) for e in body.entities] == [
        ("italic", "1.5"),
        ("code", "x_y"),
    ]


def test_raw_html_in_prose_stays_visible() -> None:
    body = render("Use Vec<T> inside <details> & friends", RenderMode.RICH)
    assert body.text == "Use Vec<T> inside <details> & friends"


def test_code_fences_become_pre_entities_with_their_language() -> None:
    body = render("Run:\n\n```python\nprint('hi')\n```\n", RenderMode.RICH)
    (pre,) = body.entities
    assert (pre.type, pre.language) == ("pre", "python")
    assert body.text[pre.offset : pre.offset + pre.length].startswith("print('hi')")


def test_plain_mode_sends_the_text_as_written() -> None:
    body = render("**not bold** <b>", RenderMode.PLAIN)
    assert body.text == "**not bold** <b>"
    assert body.entities == ()


def test_a_rendering_that_outgrows_the_limit_goes_out_plain_and_is_not_split_again() -> None:
    source = "\n\n".join(["---"] * 200)  # each rule renders as eight dashes
    assert _utf16(source) <= 1000
    body = render(source, RenderMode.RICH, limit=1000)
    assert (body.text, body.entities) == (source, ())
    shrinking = render("**" + "x" * 999 + "**", RenderMode.RICH, limit=1000)
    assert _utf16(shrinking.text) == 999
    assert shrinking.entities


def test_empty_rendering_falls_back_to_the_source() -> None:
    body = render("<!-- nothing visible -->", RenderMode.RICH)
    assert body.text == "<!-- nothing visible -->"


def test_nesting_deeper_than_the_cap_goes_out_as_written() -> None:
    shallow = "> " * (MAX_DEPTH - 2) + "**x**"  # with its paragraph and bold: MAX_DEPTH
    assert "bold" in [e.type for e in render(shallow, RenderMode.RICH).entities]
    deep = ">" * (MAX_DEPTH + 1) + " **x**"
    assert render(deep, RenderMode.RICH) == Rendered(text=deep)


async def test_the_async_render_gives_the_same_body() -> None:
    short = "Use **bold**, `code` and Vec<T> 😀 [a link](https://e.org)"
    long = "\n\n".join([short] * 20)  # over INLINE_CHARS: rendered in a worker thread
    assert len(short) <= INLINE_CHARS < len(long)
    for source in (short, long):
        for mode in RenderMode:
            assert await render_async(source, mode) == render(source, mode)
    assert await render_async("  ", RenderMode.RICH) == Rendered(text="…")


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (tg.RetryAfter(3), SendErrorKind.RATE_LIMITED),
        (tg.Forbidden("Forbidden: bot was blocked by the user"), SendErrorKind.FORBIDDEN),
        (tg.BadRequest("Bad Request: chat not found"), SendErrorKind.TARGET_NOT_FOUND),
        (tg.BadRequest("Bad Request: message thread not found"), SendErrorKind.TARGET_NOT_FOUND),
        (tg.BadRequest("Bad Request: can't parse entities: x"), SendErrorKind.INVALID_REQUEST),
        (tg.BadRequest("Bad Request: message is too long"), SendErrorKind.INVALID_REQUEST),
        (tg.BadRequest("Bad Request: not enough rights to send"), SendErrorKind.FORBIDDEN),
        (tg.ChatMigrated(-1001), SendErrorKind.TARGET_NOT_FOUND),
        (tg.InvalidToken("Unauthorized"), SendErrorKind.AUTH_FAILED),
        (tg.TimedOut(), SendErrorKind.TRANSIENT),
        (tg.NetworkError("Bad Gateway"), SendErrorKind.TRANSIENT),
        (tg.NetworkError("Request Entity Too Large"), SendErrorKind.INVALID_REQUEST),
        (tg.Conflict("Conflict: terminated by other getUpdates"), SendErrorKind.TRANSIENT),
    ],
)
def test_errors_are_classified_at_the_boundary(error: tg.TelegramError, kind: str) -> None:
    assert translate(error).kind == kind


def test_retry_after_carries_its_delay_and_edits_have_their_own_classes() -> None:
    assert translate(tg.RetryAfter(7)).retry_after == 7.0
    assert isinstance(translate(tg.BadRequest("Message is not modified: x")), NotModified)
    assert isinstance(translate(tg.BadRequest("Message to edit not found")), MessageGone)


def test_the_token_never_appears_in_a_translated_message() -> None:
    token = "123456:SECRET"  # noqa: S105 - a made-up token
    error = tg.NetworkError(f"httpx.ConnectError: http://x/file/bot{token}/a.jpg")
    assert token not in str(translate(error, token))
    assert token not in str(translate(tg.InvalidToken(f"The token `{token}` was rejected"), token))


def test_capabilities_encode_telegrams_limits() -> None:
    caps = TELEGRAM_CAPABILITIES
    assert (caps.text_limit, caps.text_unit) == (4096, TextUnit.UTF16)
    assert (caps.progress_interval_dm_s, caps.progress_interval_group_s) == (1.0, 3.0)
    assert (caps.per_chat_interval_s, caps.global_rate_per_s) == (1.0, 30.0)
    assert caps.per_dm_interval_s == 0.0  # private chats: only the bot-wide limit
    assert caps.group_messages_per_minute == 20  # the kernel's limiter keeps it
    assert (caps.max_image_bytes, caps.max_file_bytes) == (10 * 1024 * 1024, 50 * 1024 * 1024)
    assert all((caps.edits, caps.buttons, caps.threads, caps.reactions, caps.typing))
