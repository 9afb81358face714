"""Markdown → DingTalk's markdown dialect (design §8 Rendering).

DingTalk's ``markdown`` message renders headings, emphasis, links, images, lists, quotes and
(on current clients) fenced code, but joins single line breaks: a line break the author meant
is kept as a Markdown hard break (two trailing spaces) outside code fences. Every markdown
message also needs a ``title``, which is what the chat list and notifications show: the first
line of the text without its Markdown marks.

Limits: ``groupMessages/send`` takes a ``msgParam`` of at most 15 000 bytes, and that is the
text JSON-escaped inside a JSON string, so the kernel splits at ``TEXT_LIMIT`` UTF-8 bytes,
which leaves room for the escaping and the hard breaks added here.
"""

from __future__ import annotations

import re

TEXT_LIMIT = 5000
TITLE_CHARS = 30
_FENCE = re.compile(r"^\s*(```|~~~)")
_MARKS = re.compile(r"[#>*_`~\[\]]|!\[|\]\([^)]*\)|^\s*[-+]\s+|^\s*\d+\.\s+")


def dingtalk_markdown(text: str) -> str:
    """Keep the author's line breaks (hard breaks), leave code fences untouched."""
    out: list[str] = []
    fenced = False
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
            out.append(line)
            continue
        following = lines[index + 1] if index + 1 < len(lines) else ""
        breaks = not fenced and line.strip() and following.strip() and not _FENCE.match(following)
        out.append(f"{line.rstrip()}  " if breaks else line)
    return "\n".join(out)


def title_of(text: str, fallback: str = "Reply") -> str:
    """The first non-empty line, without Markdown marks, cut to ``TITLE_CHARS``."""
    for line in text.splitlines():
        plain = _MARKS.sub("", line).strip()
        if plain:
            return plain if len(plain) <= TITLE_CHARS else plain[: TITLE_CHARS - 1] + "…"
    return fallback
