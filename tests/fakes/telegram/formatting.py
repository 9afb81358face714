"""Message text and caption rules: parse mode dispatch, emptiness and the UTF-16 limits."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from tests.fakes.telegram.errors import bad_request
from tests.fakes.telegram.html_mode import parse_html
from tests.fakes.telegram.markdown_mode import parse_markdown, parse_markdown_v2
from tests.fakes.telegram.text import Formatted, parse_entities_json, trimmed

TEXT_LIMIT = 4096
CAPTION_LIMIT = 1024

_PARSERS: dict[str, Callable[[str], Formatted]] = {
    "html": parse_html,
    "markdownv2": parse_markdown_v2,
    "markdown": parse_markdown,
}


def format_text(text: str, parse_mode: str | None, entities_json: str | None) -> Formatted:
    """Applies ``parse_mode`` or explicit ``entities`` the way the Bot API server does.

    A parse mode wins over ``entities`` (as in the server's ``get_formatted_text``); an empty
    mode or ``"none"`` means plain text.
    """
    mode = (parse_mode or "").lower()
    if text and mode and mode != "none":
        parser = _PARSERS.get(mode)
        if parser is None:
            raise bad_request("unsupported parse_mode")
        return parser(text)
    entities = parse_entities_json(entities_json, text) if entities_json else []
    return trimmed(text, entities)


def message_text(params: Mapping[str, str]) -> Formatted:
    """The ``text`` of sendMessage/editMessageText, parsed; refuses empty text."""
    formatted = format_text(
        params.get("text", ""), params.get("parse_mode"), params.get("entities")
    )
    if not formatted.text:
        raise bad_request("message text is empty")
    return formatted


def check_text_length(formatted: Formatted) -> None:
    if formatted.length > TEXT_LIMIT:
        raise bad_request("message is too long")


def caption(params: Mapping[str, str]) -> Formatted | None:
    """The optional media caption, parsed and held to its 1024-unit limit."""
    raw = params.get("caption", "")
    if not raw:
        return None
    formatted = format_text(raw, params.get("parse_mode"), params.get("caption_entities"))
    if formatted.length > CAPTION_LIMIT:
        raise bad_request("message caption is too long")
    return formatted if formatted.text else None
