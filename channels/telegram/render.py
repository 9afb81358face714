"""Markdown → Telegram text + entities (design §8 Rendering).

The agent writes Markdown; telegramify-markdown turns it into plain text with
``MessageEntity`` spans. Entities need no escaping, so MarkdownV2's reserved characters and
HTML's ``&<>`` can never make Telegram answer "can't parse entities" for text the agent
wrote; when Telegram still rejects a payload, the kernel retries it as plain text
(``RenderMode.PLAIN``), which is sent exactly as written with no parse mode.

Two adjustments to the converter's defaults:

- Raw HTML in the agent's prose (``Vec<T>``, ``<details>``) would be dropped by the converter;
  it is escaped first so it shows literally.
- Headings are bold without the converter's emoji prefixes, and bullets are "•".

Text is split once, by the kernel, in UTF-16 units at 4096 before rendering (one outbox row is
one Telegram message, so a retry never resends half of it). Rendering rarely lengthens text
(entities replace the Markdown markers; a rule ``---`` becomes a line of dashes); a chunk whose
rendering outgrows the limit goes out as plain text, exactly as written, instead of being split
a second time.

Bounded time: the converter is super-linear on some inputs (runs of empty fences: 80 KB took
7.7 s), so it only ever sees one chunk — a text over twice the limit, which the kernel never
sends, goes out as written — and nothing nested deeper than ``MAX_DEPTH`` (no answer is; such
text goes out as written too). ``render_async`` renders in a worker thread: tens of
milliseconds for the worst chunk, which the event loop should not wait through. A text of at
most ``INLINE_CHARS`` characters is rendered on the loop: about 25 µs for a typical answer and
about 1 ms for the worst input of that length (``bench/render_worst.py``'s cases cut to 512),
less than the hop to a worker thread and back costs the loop for most answers.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass

import pyromark
import telegramify_markdown as tgm
from telegram import MessageEntity
from telegramify_markdown.converter import STANDARD_OPTIONS

from bot.messages import RenderMode

TEXT_LIMIT = 4096
MAX_DEPTH = 32
INLINE_CHARS = 512


def _config() -> tgm.RenderConfig:
    config = tgm.RenderConfig.isolated()
    symbols = config.markdown_symbol
    symbols.heading_level_1 = symbols.heading_level_2 = ""
    symbols.heading_level_3 = symbols.heading_level_4 = ""
    symbols.unordered_list_item = "•"
    return config


_CONFIG = _config()


@dataclass(frozen=True, slots=True, kw_only=True)
class Rendered:
    """One Telegram message body: text and its entities (none for plain text)."""

    text: str
    entities: tuple[MessageEntity, ...] = ()


async def render_async(text: str, mode: RenderMode, limit: int = TEXT_LIMIT) -> Rendered:
    """``render``, in a worker thread when it converts Markdown longer than ``INLINE_CHARS``."""
    if mode is RenderMode.RICH and len(text) > INLINE_CHARS and text.strip():
        return await asyncio.to_thread(render, text, mode, limit)
    return render(text, mode, limit)


def render(text: str, mode: RenderMode, limit: int = TEXT_LIMIT) -> Rendered:
    """The body of one message (a send or an edit) for one chunk of the kernel's split."""
    if not text.strip():
        return Rendered(text="…")  # Telegram refuses empty text
    if mode is RenderMode.RICH and tgm.utf16_len(text) <= 2 * limit and _shallow(text):
        rich = _rich(text)
        if rich is not None and tgm.utf16_len(rich[0]) <= limit:
            return Rendered(text=rich[0], entities=_ptb(rich[1]))
    return Rendered(text=text)


def _rich(text: str) -> tuple[str, list[tgm.MessageEntity]] | None:
    body, entities = tgm.convert(_escape_raw_html(text), config=_CONFIG)
    if not body.strip():
        return None  # nothing visible left (an HTML comment, an empty image): send as written
    return body, entities


def _ptb(entities: list[tgm.MessageEntity]) -> tuple[MessageEntity, ...]:
    return tuple(
        MessageEntity(
            type=e.type,
            offset=e.offset,
            length=e.length,
            url=e.url,
            language=e.language,
            custom_emoji_id=e.custom_emoji_id,
        )
        for e in entities
    )


def _escape_raw_html(markdown: str) -> str:
    """Backslash-escape every ``<`` the parser would read as raw HTML, so it stays visible."""
    if "<" not in markdown:
        return markdown
    data = markdown.encode()
    positions: list[int] = []
    for event, source in pyromark.events_with_range(markdown, options=STANDARD_OPTIONS):
        if isinstance(event, dict) and ("InlineHtml" in event or "Html" in event):
            start, end = source["start"], source["end"]
            positions.extend(i for i in range(start, end) if data[i] == ord("<"))
    if not positions:
        return markdown
    bounds = [0, *sorted(positions), len(data)]
    return b"\\".join(data[a:b] for a, b in itertools.pairwise(bounds)).decode()


def _shallow(text: str) -> bool:
    """Whether no block or span nests deeper than ``MAX_DEPTH`` (the parse stops there)."""
    depth = 0
    for event in pyromark.events(text, options=STANDARD_OPTIONS):
        if isinstance(event, dict):
            if "Start" in event:
                depth += 1
                if depth > MAX_DEPTH:
                    return False
            elif "End" in event:
                depth -= 1
    return True
