"""What ``im/v1/messages`` accepts as ``content`` for each ``msg_type``, checked like Feishu does.

- ``text``: ``{"text": "<non-empty>"}``, at most 150 KB.
- ``post``: ``{"<locale>": {"title"?: str, "content": [[{"tag": ...}, ...], ...]}}`` (no
  ``{"post": ...}`` wrapper: that's the custom-bot webhook format, the IM API rejects it),
  at most 30 KB.
- ``interactive``: a card JSON (1.0: ``elements``/``i18n_elements``; 2.0: ``schema="2.0"`` and
  ``body.elements``; at most 200 elements) at most 30 KB, or ``{"type": "card", "data":
  {"card_id"}}`` naming a CardKit card.
- ``image``: ``{"image_key"}`` of an uploaded image; ``file``: ``{"file_key"}`` of an upload.
"""

from __future__ import annotations

import json
from typing import Any

from tests.fakes.feishu import codes
from tests.fakes.feishu.records import ApiError

TEXT_LIMIT = 150 * 1024
RICH_LIMIT = 30 * 1024  # post and card messages; measured on the ``content`` JSON string
POST_LOCALES = frozenset({"zh_cn", "en_us", "ja_jp", "zh_hk", "zh_tw", "id_id", "vi_vn", "th_th"})
POST_TAGS = frozenset({"text", "a", "at", "img", "media", "emotion", "code_block", "hr", "md"})
MSG_TYPES = frozenset({"text", "post", "interactive", "image", "file", "audio", "media", "sticker"})
TEXT_TAGS = frozenset({"markdown", "plain_text"})  # what CardKit streams into
MAX_CARD_ELEMENTS = 200  # [doc] card JSON 2.0: at most 200 components in one card


def parse_content(raw: object) -> dict[str, Any]:
    if not isinstance(raw, str) or not raw:
        raise codes.field_error("content")
    try:
        content = json.loads(raw)
    except ValueError:
        raise codes.invalid("invalid message content") from None
    if not isinstance(content, dict):
        raise codes.invalid("invalid message content")
    return content


def check_size(msg_type: str, raw: str) -> None:
    limit = TEXT_LIMIT if msg_type == "text" else RICH_LIMIT
    if len(raw.encode()) > limit:
        raise codes.too_long()


def check_text(content: dict[str, Any]) -> None:
    text = content.get("text")
    if not isinstance(text, str) or not text.strip():
        raise codes.invalid("invalid message content")


def check_post(content: dict[str, Any]) -> None:
    if not content or not set(content) <= POST_LOCALES:
        raise codes.invalid("invalid message content")
    for body in content.values():
        if not isinstance(body, dict) or not isinstance(body.get("title", ""), str):
            raise codes.invalid("invalid message content")
        paragraphs = body.get("content")
        if not isinstance(paragraphs, list) or not paragraphs:
            raise codes.invalid("invalid message content")
        for paragraph in paragraphs:
            if not isinstance(paragraph, list):
                raise codes.invalid("invalid message content")
            for node in paragraph:
                if not isinstance(node, dict) or node.get("tag") not in POST_TAGS:
                    raise codes.invalid("invalid message content")


def card_problem(card: dict[str, Any]) -> str | None:
    """Why a card JSON (1.0 or 2.0) is not a card, or None if it is one."""
    if card.get("schema") == "2.0":
        body = card.get("body")
        elements = body.get("elements") if isinstance(body, dict) else None
        if not isinstance(elements, list):
            return "schema 2.0 card needs body.elements"
    elif "elements" in card:
        elements = card["elements"]
    elif isinstance(card.get("i18n_elements"), dict):
        elements = [e for group in card["i18n_elements"].values() for e in group]
    else:
        return "card has no elements"
    if not isinstance(elements, list):
        return "elements must be a list"
    if len(elements) > MAX_CARD_ELEMENTS:
        return f"a card holds at most {MAX_CARD_ELEMENTS} elements"
    for element in elements:
        if not isinstance(element, dict) or not isinstance(element.get("tag"), str):
            return "every element needs a tag"
    return None


def check_card(content: dict[str, Any]) -> None:
    problem = card_problem(content)
    if problem is not None:
        raise codes.bad_card(problem)


def referenced_card_id(content: dict[str, Any]) -> str | None:
    """The CardKit card_id of ``{"type":"card","data":{"card_id"}}`` content, else None."""
    if content.get("type") != "card":
        return None
    data = content.get("data")
    card_id = data.get("card_id") if isinstance(data, dict) else None
    if not isinstance(card_id, str) or not card_id:
        raise codes.bad_card("data.card_id is required for type=card")
    return card_id


def resource_key(content: dict[str, Any], field: str) -> str:
    key = content.get(field)
    if not isinstance(key, str) or not key:
        raise codes.invalid(f"invalid {field}")
    return key


def element_index(card: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every dict carrying an ``element_id`` in a card JSON, by that id."""
    found: dict[str, dict[str, Any]] = {}
    stack: list[Any] = [card]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            element_id = node.get("element_id")
            if isinstance(element_id, str) and element_id:
                found[element_id] = node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def unsupported_type(msg_type: object) -> ApiError:
    return codes.invalid(f"unsupported msg_type {msg_type!r}")
