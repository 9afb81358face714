"""Message text as Telegram measures it: UTF-16 lengths, entities and the parse_mode dispatch.

The parsers (``html_mode``, ``markdown_mode``) build text through ``TextBuilder`` so entity
offsets come out in UTF-16 code units, the unit the Bot API counts limits and offsets in.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tests.fakes.telegram.errors import bad_request

Entity = dict[str, Any]

ENTITY_TYPES = frozenset(
    {
        "mention", "hashtag", "cashtag", "bot_command", "url", "email", "phone_number",
        "bold", "italic", "underline", "strikethrough", "spoiler", "blockquote",
        "expandable_blockquote", "code", "pre", "text_link", "text_mention", "custom_emoji",
    }
)  # fmt: skip
_REQUIRED_FIELD = {"text_link": "url", "text_mention": "user", "custom_emoji": "custom_emoji_id"}


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


@dataclass(frozen=True, slots=True)
class Formatted:
    """Text after entity parsing, as the real server would store it."""

    text: str
    entities: tuple[Entity, ...] = ()

    @property
    def length(self) -> int:
        return utf16_len(self.text)


Mark = tuple[int, int]  # (index into the builder's parts, UTF-16 offset)


class TextBuilder:
    """Accumulates parsed text and the entities opened and closed over it."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self.offset = 0
        self.entities: list[Entity] = []

    def add(self, text: str) -> None:
        self._parts.append(text)
        self.offset += utf16_len(text)

    def mark(self) -> Mark:
        return (len(self._parts), self.offset)

    def since(self, mark: Mark) -> str:
        return "".join(self._parts[mark[0] :])

    def entity(self, kind: str, mark: Mark, **extra: Any) -> None:
        """Adds an entity from ``mark`` to here; empty ones are dropped, as Telegram does."""
        length = self.offset - mark[1]
        if length > 0:
            self.entities.append({"type": kind, "offset": mark[1], "length": length, **extra})

    def finish(self) -> Formatted:
        return trimmed("".join(self._parts), self.entities)


def trimmed(text: str, entities: list[Entity] | tuple[Entity, ...]) -> Formatted:
    """Strips surrounding whitespace like Telegram does and clips entities to what remains."""
    left = text.lstrip()
    cut = utf16_len(text) - utf16_len(left)
    body = left.rstrip()
    size = utf16_len(body)
    kept: list[Entity] = []
    for entity in entities:
        start = max(entity["offset"] - cut, 0)
        end = min(entity["offset"] + entity["length"] - cut, size)
        if end > start:
            kept.append({**entity, "offset": start, "length": end - start})
    kept.sort(key=lambda e: (e["offset"], -e["length"]))
    return Formatted(body, tuple(kept))


def parse_entities_json(raw: str, text: str) -> list[Entity]:
    """Validates an ``entities`` parameter against the text it describes (UTF-16 units)."""
    try:
        value = json.loads(raw)
    except ValueError:
        raise bad_request("can't parse entities JSON object") from None
    if not isinstance(value, list):
        raise bad_request("can't parse entities JSON object")
    size = utf16_len(text)
    return [entity for item in value if (entity := _entity(item, size)) is not None]


def _entity(item: object, size: int) -> Entity | None:
    if not isinstance(item, dict):
        raise bad_request("can't parse MessageEntity: expected an Object")
    kind = item.get("type")
    if not isinstance(kind, str) or kind not in ENTITY_TYPES:
        raise bad_request("can't parse MessageEntity: Unsupported type specified")
    for name in ("offset", "length"):
        number = item.get(name)
        if not isinstance(number, int) or isinstance(number, bool) or number < 0:
            raise bad_request(f'can\'t parse MessageEntity: Field "{name}" must be a valid Number')
    required = _REQUIRED_FIELD.get(kind)
    if required is not None and required not in item:
        raise bad_request(f'can\'t parse MessageEntity: Field "{required}" must be specified')
    offset, length = item["offset"], item["length"]
    if offset + length > size:
        raise bad_request(
            f"can't parse entities: {kind} entity at offset {offset} with length {length} is "
            f"beyond the end of the text ({size} UTF-16 code units)"
        )
    return dict(item) if length else None
