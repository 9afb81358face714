"""The Slack adapter's pure parts: rendering, error kinds, markup decoding, event filtering,
proxy choice and which file URLs may receive the bot token."""

from __future__ import annotations

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from bot.errors import SendErrorKind
from bot.messages import Button
from channels.slack.adapter import proxy_for
from channels.slack.downloads import allowed_url
from channels.slack.errors import translate
from channels.slack.inbound import BotSelf, InboundRules, Translator, attachments_of
from channels.slack.markup import UserNames, strip_leading_mention, to_text
from channels.slack.render import Rung, chosen_blocks, render

ME = BotSelf(team_id="T1", user_id="UBOT", bot_id="B1", name="switchboard")


def _error(
    status: int, body: dict[str, object], headers: dict[str, str] | None = None
) -> SlackApiError:
    response = AsyncSlackResponse(
        client=AsyncWebClient(), http_verb="POST", api_url="x", req_args={}, data=body,
        headers=headers or {}, status_code=status,
    )  # fmt: skip
    return SlackApiError("refused", response)  # type: ignore[no-untyped-call]


@pytest.mark.parametrize(
    ("status", "error", "kind"),
    [
        (429, "ratelimited", SendErrorKind.RATE_LIMITED),
        (200, "ratelimited", SendErrorKind.RATE_LIMITED),
        (200, "channel_not_found", SendErrorKind.TARGET_NOT_FOUND),
        (200, "not_in_channel", SendErrorKind.TARGET_NOT_FOUND),
        (200, "is_archived", SendErrorKind.FORBIDDEN),
        (200, "restricted_action", SendErrorKind.FORBIDDEN),
        (200, "invalid_auth", SendErrorKind.AUTH_FAILED),
        (200, "token_revoked", SendErrorKind.AUTH_FAILED),
        (200, "account_inactive", SendErrorKind.AUTH_FAILED),
        (200, "invalid_blocks", SendErrorKind.INVALID_REQUEST),
        (200, "msg_too_long", SendErrorKind.INVALID_REQUEST),
        (200, "invalid_arguments", SendErrorKind.INVALID_REQUEST),
        (500, "", SendErrorKind.TRANSIENT),
        (503, "service_unavailable", SendErrorKind.TRANSIENT),
        (200, "internal_error", SendErrorKind.TRANSIENT),
    ],
)
def test_errors_map_to_kernel_kinds(status: int, error: str, kind: SendErrorKind) -> None:
    body: dict[str, object] = {"ok": False, "error": error} if error else {}
    assert translate(_error(status, body)).kind is kind


def test_retry_after_header_is_carried() -> None:
    found = translate(_error(429, {"ok": False, "error": "ratelimited"}, {"Retry-After": "7"}))
    assert found.retry_after == 7.0


def test_rich_render_uses_a_markdown_block_with_text_fallback() -> None:
    payload = render("**bold** & <tag>", Rung.MARKDOWN)
    assert payload.blocks == ({"type": "markdown", "text": "**bold** & <tag>"},)
    assert payload.text == "**bold** &amp; &lt;tag&gt;"


def test_mrkdwn_and_plain_rungs() -> None:
    assert render("**bold** [x](https://e.org)", Rung.MRKDWN).text == "*bold* <https://e.org|x>"
    plain = render("**bold** <b>", Rung.PLAIN)
    assert (plain.text, plain.blocks, plain.mrkdwn) == ("**bold** &lt;b&gt;", (), False)


def test_buttons_become_an_actions_block_and_a_click_marks_the_choice() -> None:
    buttons = (Button(label="Red", payload="c/1/0"), Button(label="Blue", payload="c/1/1"))
    payload = render("Which?", Rung.MARKDOWN, buttons)
    actions = payload.blocks[-1]
    assert actions["type"] == "actions"
    elements = actions["elements"]
    assert isinstance(elements, list)
    assert [e["value"] for e in elements] == ["c/1/0", "c/1/1"]
    assert len({e["action_id"] for e in elements}) == 2
    marked = chosen_blocks(list(payload.blocks), "Blue")
    assert [b["type"] for b in marked] == ["markdown", "context"]
    plain = render("Which?", Rung.PLAIN, buttons)
    assert [b["type"] for b in plain.blocks] == ["section", "actions"]


def test_markup_decoding() -> None:
    raw = "<@UBOT> hi <@U2> see <#C1|general> <https://e.org|docs> <!here> a &lt; b &amp; c"
    text = to_text(strip_leading_mention(raw, "UBOT"), {"U2": "Ann"})
    assert text == "hi @Ann see #general [docs](https://e.org) @here a < b & c"
    assert to_text("ask <@UBOT> now", {"UBOT": "switchboard"}) == "ask @switchboard now"


async def _no_name(_user: str) -> str | None:
    return None


@pytest.mark.parametrize(
    ("event", "ignored"),
    [
        ({"type": "message", "user": "U2", "text": "hi"}, False),
        ({"type": "message", "subtype": "file_share", "user": "U2"}, False),
        ({"type": "message", "subtype": "message_changed", "user": "U2"}, True),
        ({"type": "message", "subtype": "message_deleted"}, True),
        ({"type": "message", "subtype": "channel_join", "user": "U2"}, True),
        ({"type": "message", "user": "UBOT", "text": "mine"}, True),
        ({"type": "message", "bot_id": "B1", "text": "mine"}, True),
        ({"type": "message", "subtype": "bot_message", "bot_id": "B9"}, True),
    ],
)
def test_what_the_adapter_ignores(event: dict[str, object], *, ignored: bool) -> None:
    translator = Translator(ME, UserNames(_no_name), InboundRules())
    assert translator.is_ignored(event) is ignored


def test_other_bots_can_be_let_through() -> None:
    translator = Translator(ME, UserNames(_no_name), InboundRules(ignore_other_bots=False))
    assert not translator.is_ignored({"type": "message", "subtype": "bot_message", "bot_id": "B9"})


async def test_thread_replies_and_dm_threads() -> None:
    translator = Translator(ME, UserNames(_no_name), InboundRules())
    event = {
        "type": "message", "channel": "D1", "channel_type": "im", "user": "U2", "text": "hi",
        "ts": "2.0", "thread_ts": "1.0", "parent_user_id": "UBOT",
    }  # fmt: skip
    message = await translator.message(event, via_mention=False)
    assert message is not None
    assert (message.thread_root_id, message.reply_to_bot, message.chat_type) == ("1.0", True, "dm")
    top = await translator.message({**event, "thread_ts": "2.0"}, via_mention=False)
    assert top is not None
    assert top.thread_root_id is None


def test_files_become_attachments() -> None:
    files = [
        {"id": "F1", "name": "a.png", "mimetype": "image/png", "size": 3,
         "url_private_download": "u1"},
        {"id": "F2", "name": "gone", "mode": "tombstone"},
    ]  # fmt: skip
    [only] = attachments_of(files)
    assert (only.kind, only.name, only.size, only.ref) == ("image", "a.png", 3, "u1")


def test_token_goes_only_to_slack_file_hosts() -> None:
    api = "https://slack.com/api/"
    assert allowed_url("https://files.slack.com/files-pri/T1-F1/download/a.txt", api)
    assert not allowed_url("https://evil.example/files-pri/a.txt", api)
    assert not allowed_url("http://files.slack.com/a.txt", api)
    assert allowed_url("http://127.0.0.1:5000/files-pri/x", "http://127.0.0.1:5000/api/")


def test_proxy_choice_honours_no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    assert proxy_for("https://slack.com/api/") == "http://proxy.internal:3128"
    assert proxy_for("http://127.0.0.1:8080/api/") is None
