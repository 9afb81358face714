"""Chat text as the console shows it: Markdown rendered to a small, safe subset of HTML.

The text is parsed by pyromark (pulldown-cmark, linear; already the Telegram and Slack
renderers' parser) and written from its events: every piece of text is escaped, raw HTML in
the text stays visible as text, links are kept only to ``http``, ``https`` and ``mailto``
(``rel="noopener noreferrer nofollow"``), and an image is a link to it, never loaded. Only the
tags below are written, each closed by its own event, so the output is balanced however the
text nests.
"""

from __future__ import annotations

from typing import Final

import pyromark
from markupsafe import Markup, escape

from bot.text.escape import escape_lines

__all__ = ["LIMIT", "to_html"]

LIMIT: Final = 4000
"""Characters of a message rendered at most; the rest is cut with an ellipsis."""
OPTIONS: Final = (
    pyromark.Options.ENABLE_TABLES
    | pyromark.Options.ENABLE_STRIKETHROUGH
    | pyromark.Options.ENABLE_TASKLISTS
)
SAFE_SCHEMES: Final = ("http://", "https://", "mailto:")
_TAGS: Final = {
    "Paragraph": ("<p>", "</p>"),
    "Heading": ("<p><strong>", "</strong></p>"),
    "BlockQuote": ("<blockquote>", "</blockquote>"),
    "CodeBlock": ("<pre><code>", "</code></pre>"),
    "Item": ("<li>", "</li>"),
    "Emphasis": ("<em>", "</em>"),
    "Strong": ("<strong>", "</strong>"),
    "Strikethrough": ("<del>", "</del>"),
    "Table": ('<table class="md">', "</table>"),
    "TableHead": ("<thead><tr>", "</tr></thead>"),
    "TableRow": ("<tr>", "</tr>"),
    "TableCell": ("<td>", "</td>"),
}
_LEAVES: Final = {"SoftBreak": "<br>", "HardBreak": "<br>", "Rule": "<hr>"}


def to_html(text: str, limit: int = LIMIT) -> Markup:
    """``text`` (Markdown) as safe HTML, at most ``limit`` characters of it."""
    source = escape_lines(text.strip())
    if len(source) > limit:
        source = source[: limit - 1] + "…"
    out: list[str] = []
    closing: list[str] = []
    for event in pyromark.events(source, options=OPTIONS):
        if isinstance(event, str):
            out.append(_LEAVES.get(event, ""))
            continue
        ((kind, value),) = event.items()
        if kind == "Start":
            opening, close = _start(value)
            out.append(opening)
            closing.append(close)
        elif kind == "End":
            out.append(closing.pop() if closing else "")
        elif kind == "Code":
            out.append(f"<code>{escape(str(value))}</code>")
        elif kind == "TaskListMarker":
            out.append("☑ " if value else "☐ ")
        else:  # Text, and raw HTML shown as the text it is
            out.append(str(escape(str(value))))
    out.extend(reversed(closing))
    return Markup("".join(out))  # noqa: S704 - built from escaped text and fixed tags only


def _start(tag: object) -> tuple[str, str]:
    """The opening and closing HTML of a node."""
    name, detail = _split(tag)
    if name == "List":
        return ("<ul>", "</ul>") if detail is None else (_ordered(detail), "</ol>")
    if name in ("Link", "Image"):
        url = str(detail.get("dest_url", "")) if isinstance(detail, dict) else ""
        if not url.lower().startswith(SAFE_SCHEMES):
            return "", ""  # the link's text, not the link
        prefix = "image: " if name == "Image" else ""
        anchor = f'<a href="{escape(url)}" rel="noopener noreferrer nofollow">{prefix}'
        return anchor, "</a>"
    return _TAGS.get(name, ("", ""))


def _ordered(start: object) -> str:
    first = start if isinstance(start, int) else 1
    return "<ol>" if first == 1 else f'<ol start="{first}">'


def _split(tag: object) -> tuple[str, object]:
    """A tag with data: ``{"Heading": {...}}`` → ``("Heading", {...})``."""
    if isinstance(tag, dict):
        ((key, value),) = tag.items()
        return str(key), value
    return str(tag), None
