"""Message content validation with Slack's documented limits.

Only the rules a bot can trip are modelled: the text and block counts, section and markdown
lengths, well-formed text objects and buttons. An unknown block type is rejected, as Slack does.
"""

from __future__ import annotations

import json
from typing import Any

from tests.fakes.slack.records import ApiError

MAX_TEXT = 40_000
MAX_BLOCKS = 50
MAX_SECTION_TEXT = 3_000
MAX_FIELD_TEXT = 2_000
MAX_MARKDOWN_TOTAL = 12_000  # cumulative over all markdown blocks of one message
MAX_HEADER_TEXT = 150
MAX_BUTTON_TEXT = 75
MAX_BUTTON_VALUE = 2_000
MAX_ID = 255

_PASSTHROUGH = {"rich_text", "input", "file", "video", "call", "table"}
_TEXT_TYPES = {"plain_text", "mrkdwn"}


def parse_json_list(raw: object, *, error: str) -> list[Any] | None:
    """Blocks and attachments arrive as a list (JSON body) or a JSON string (form/query)."""
    if raw is None or raw == "":
        return None
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raise ApiError(error, "could not parse JSON") from None
    if not isinstance(raw, list):
        raise ApiError(error, "must be an array")
    return raw


def check_content(params: dict[str, Any], *, require: bool = True) -> list[dict[str, Any]] | None:
    """Validate ``text``/``blocks``/``attachments``; return the parsed blocks."""
    text = params.get("text")
    blocks = parse_json_list(params.get("blocks"), error="invalid_blocks_format")
    attachments = parse_json_list(params.get("attachments"), error="invalid_attachments")
    if require and not text and not blocks and not attachments:
        raise ApiError("no_text")
    if isinstance(text, str) and len(text) > MAX_TEXT:
        raise ApiError("msg_too_long")
    if blocks is not None:
        check_blocks(blocks)
    return blocks


def check_blocks(blocks: list[Any]) -> None:
    if len(blocks) > MAX_BLOCKS:
        raise ApiError("invalid_blocks", f"no more than {MAX_BLOCKS} items allowed [json-pointer:]")
    seen_ids: set[str] = set()
    markdown_total = 0
    for index, block in enumerate(blocks):
        where = f"[json-pointer:/blocks/{index}]"
        if not isinstance(block, dict):
            raise ApiError("invalid_blocks", f"must be an object {where}")
        block_id = block.get("block_id")
        if block_id is not None:
            if not isinstance(block_id, str) or not 0 < len(block_id) <= MAX_ID:
                raise ApiError("invalid_blocks", f"invalid block_id {where}")
            if block_id in seen_ids:
                raise ApiError("invalid_blocks", f"duplicate block_id {where}")
            seen_ids.add(block_id)
        problem = _block_problem(block)
        if problem:
            raise ApiError("invalid_blocks", f"{problem} {where}")
        if block["type"] == "markdown":
            markdown_total += len(block["text"])
    if markdown_total > MAX_MARKDOWN_TOTAL:
        raise ApiError("invalid_blocks", "markdown blocks exceed 12000 characters")


def _block_problem(block: dict[str, Any]) -> str | None:
    kind = block.get("type")
    checks = {
        "section": _section_problem,
        "markdown": _markdown_problem,
        "header": _header_problem,
        "divider": lambda _b: None,
        "context": _context_problem,
        "actions": _actions_problem,
        "image": _image_problem,
    }
    if isinstance(kind, str) and kind in checks:
        return checks[kind](block)
    if kind in _PASSTHROUGH:
        return None
    return f"unsupported type: {kind!r}"


def _text_problem(obj: object, limit: int, *, plain_only: bool = False) -> str | None:
    if not isinstance(obj, dict):
        return "text must be a text object"
    kind, text = obj.get("type"), obj.get("text")
    allowed = {"plain_text"} if plain_only else _TEXT_TYPES
    if kind not in allowed:
        return f"text type must be one of {sorted(allowed)}"
    if not isinstance(text, str) or not text:
        return "must be more than 0 characters"
    if len(text) > limit:
        return f"must be less than {limit + 1} characters"
    return None


def _section_problem(block: dict[str, Any]) -> str | None:
    text, fields = block.get("text"), block.get("fields")
    if text is None and fields is None:
        return "must provide text or fields"
    if text is not None and (problem := _text_problem(text, MAX_SECTION_TEXT)):
        return problem
    if fields is not None:
        if not isinstance(fields, list) or not 0 < len(fields) <= 10:
            return "fields must hold 1 to 10 items"
        for field in fields:
            if problem := _text_problem(field, MAX_FIELD_TEXT):
                return problem
    accessory = block.get("accessory")
    return None if accessory is None else _element_problem(accessory)


def _markdown_problem(block: dict[str, Any]) -> str | None:
    text = block.get("text")
    if not isinstance(text, str) or not text:
        return "markdown text must be a non-empty string"
    if len(text) > MAX_MARKDOWN_TOTAL:
        return f"must be less than {MAX_MARKDOWN_TOTAL + 1} characters"
    return None


def _header_problem(block: dict[str, Any]) -> str | None:
    return _text_problem(block.get("text"), MAX_HEADER_TEXT, plain_only=True)


def _context_problem(block: dict[str, Any]) -> str | None:
    elements = block.get("elements")
    if not isinstance(elements, list) or not 0 < len(elements) <= 10:
        return "context elements must hold 1 to 10 items"
    for element in elements:
        is_image = isinstance(element, dict) and element.get("type") == "image"
        problem = _image_problem(element) if is_image else _text_problem(element, MAX_TEXT)
        if problem:
            return problem
    return None


def _actions_problem(block: dict[str, Any]) -> str | None:
    elements = block.get("elements")
    if not isinstance(elements, list) or not 0 < len(elements) <= 25:
        return "actions elements must hold 1 to 25 items"
    action_ids = [e.get("action_id") for e in elements if isinstance(e, dict)]
    named = [a for a in action_ids if a is not None]
    if len(named) != len(set(named)):
        return "duplicate action_id"
    for element in elements:
        if problem := _element_problem(element):
            return problem
    return None


def _element_problem(element: object) -> str | None:
    if not isinstance(element, dict) or not isinstance(element.get("type"), str):
        return "element must be an object with a type"
    action_id = element.get("action_id")
    if action_id is not None and (not isinstance(action_id, str) or len(action_id) > MAX_ID):
        return "invalid action_id"
    return _button_problem(element) if element["type"] == "button" else None


def _button_problem(element: dict[str, Any]) -> str | None:
    if problem := _text_problem(element.get("text"), MAX_BUTTON_TEXT, plain_only=True):
        return problem
    value = element.get("value")
    if value is not None and (not isinstance(value, str) or len(value) > MAX_BUTTON_VALUE):
        return "button value must be a string of at most 2000 characters"
    if element.get("style") not in (None, "primary", "danger"):
        return "button style must be primary or danger"
    return None


def _image_problem(block: object) -> str | None:
    if not isinstance(block, dict):
        return "image must be an object"
    if not block.get("image_url") and not block.get("slack_file"):
        return "image needs image_url or slack_file"
    if not isinstance(block.get("alt_text"), str):
        return "image needs alt_text"
    return None
