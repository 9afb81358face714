"""The agent's Markdown → Feishu message contents, with the fallback ladder of design §8.

Three rungs, best first:

1. ``CARD`` — an interactive card (JSON 2.0) whose body is one ``markdown`` element: card
   markdown renders headings, lists, code blocks and links; buttons follow it.
2. ``POST`` — a rich-text ``post`` holding one ``md`` node, for payloads a card refused.
3. ``TEXT`` — a ``text`` message with the Markdown as written (``RenderMode.PLAIN``). With
   buttons it stays a card (only cards have buttons) with the text in a ``plain_text`` element.

The adapter walks 1 → 2 itself when Feishu rejects the content; the kernel asks for rung 3.

Sizes: Feishu refuses a ``post`` or card whose ``content`` string exceeds 30 KB (UTF-8). The
kernel splits text at ``TEXT_LIMIT`` characters; the worst character costs 4 bytes in the
content string (a 4-byte emoji, or ``"``/``\\`` escaped once more), C0 control characters are
dropped (they would cost 6), so 7 000 characters plus the card's frame and buttons stay under
the limit. A content over it anyway raises ``InvalidRequest`` here, which moves down a rung.

Mentions are never produced from the agent's text: ``<at …>`` tags are defused in every rung
(card markdown and ``md`` understand ``&lt;``; plain text gets a zero-width space).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from bot.errors import InvalidRequest
from bot.messages import Button
from channels.feishu.api import dumps

Json = dict[str, Any]

TEXT_LIMIT = 7_000
QUESTION_TEXT_LIMIT = 4_000
"""The text above a question's buttons: the buttons take room in the same 30 KB card."""
CONTENT_LIMIT = 30 * 1024
ELEMENT_ID = "sb_answer"
VALUE_KEY = "switchboard"
BUTTON_LABEL_LIMIT = 40
EMPTY = "(empty)"
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_TAG = re.compile(r"<(?=/?[A-Za-z])")
_AT_TAG = re.compile(r"<(?=/?at\b)", re.IGNORECASE)


class Rung(StrEnum):
    CARD = "card"
    POST = "post"
    TEXT = "text"


@dataclass(frozen=True, slots=True, kw_only=True)
class Content:
    """``msg_type`` and the ``content`` JSON string of one message."""

    msg_type: str
    content: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ButtonScope:
    """Where a card's buttons live; carried in each button's value so a press can be
    placed without any memory of the question (also after a restart)."""

    chat_type: str
    topic_id: str | None


def clean(text: str) -> str:
    text = _CONTROL.sub("", text)
    return text if text.strip() else EMPTY


def card_markdown(text: str) -> str:
    """Card markdown with HTML-like tags (``<at>``, ``<font>``…) shown, not interpreted."""
    return _TAG.sub("&lt;", clean(text))


def plain(text: str) -> str:
    return _AT_TAG.sub("<\u200b", clean(text))


def render(
    text: str, rung: Rung, buttons: tuple[Button, ...] = (), scope: ButtonScope | None = None
) -> Content:
    """The content of one message (already within the kernel's chunk size)."""
    if rung is Rung.CARD or (buttons and scope is not None):
        body = markdown_element(text) if rung is not Rung.TEXT else plain_element(text)
        card = static_card([body, *button_elements(buttons, scope)])
        return sized(Content(msg_type="interactive", content=dumps(card)))
    if rung is Rung.POST:
        post = {"zh_cn": {"content": [[{"tag": "md", "text": card_markdown(text)}]]}}
        return sized(Content(msg_type="post", content=dumps(post)))
    return Content(msg_type="text", content=dumps({"text": plain(text)}))


def sized(content: Content) -> Content:
    size = len(content.content.encode())
    if size > CONTENT_LIMIT:
        raise InvalidRequest(f"{content.msg_type} content is {size} bytes (limit {CONTENT_LIMIT})")
    return content


def markdown_element(text: str) -> Json:
    return {"tag": "markdown", "content": card_markdown(text), "element_id": ELEMENT_ID}


def plain_element(text: str) -> Json:
    return {"tag": "div", "text": {"tag": "plain_text", "content": clean(text)}}


def static_card(elements: list[Json]) -> Json:
    return {"schema": "2.0", "config": {"update_multi": True}, "body": {"elements": elements}}


def streaming_card(text: str) -> Json:
    """A CardKit card that streams into its one markdown element."""
    return {
        "schema": "2.0",
        "config": {"update_multi": True, "streaming_mode": True},
        "body": {"elements": [markdown_element(text)]},
    }


def button_elements(
    buttons: tuple[Button, ...], scope: ButtonScope | None, *, chosen: str | None = None
) -> list[Json]:
    if not buttons or scope is None:
        return []
    return [_button(i, b, scope, chosen) for i, b in enumerate(buttons)]


def _button(index: int, button: Button, scope: ButtonScope, chosen: str | None) -> Json:
    label = button.label.strip() or str(index + 1)
    if len(label) > BUTTON_LABEL_LIMIT:
        label = label[: BUTTON_LABEL_LIMIT - 1] + "…"
    value = {
        VALUE_KEY: button.payload,
        "label": label,
        "chat_type": scope.chat_type,
        "topic": scope.topic_id or "",
    }
    element: Json = {
        "tag": "button",
        "element_id": f"sb_button_{index}",
        "text": {"tag": "plain_text", "content": label},
        "type": "primary" if chosen == button.payload else "default",
        "behaviors": [{"type": "callback", "value": value}],
    }
    if chosen is not None:
        element["disabled"] = True
    return element


def chosen_card(
    text: str | None,
    buttons: tuple[Button, ...],
    scope: ButtonScope | None,
    payload: str,
    label: str,
) -> Json:
    """The question after a press: its text, the choice, and every button disabled."""
    line = f"✅ Chosen: **{card_markdown(label)}**"
    elements = [markdown_element(f"{text}\n\n{line}" if text else line)]
    elements += button_elements(buttons, scope, chosen=payload)
    return static_card(elements)
