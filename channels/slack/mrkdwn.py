"""Markdown → Slack mrkdwn in linear time (the ``MRKDWN`` rung of design §8).

The Markdown is parsed by pyromark (pulldown-cmark: linear, already here for Telegram) and
rewritten in one pass over its events, each with its byte range in the source. The source is
copied as written (escaped) except for the marks mrkdwn spells differently: ``**b**`` → ``*b*``,
``*i*`` → ``_i_``, ``~~s~~`` → ``~s~``, ``[t](u)`` → ``<u|t>``, an image → ``<u>``, a heading →
``*Title*``, a bullet → ``•``, a task box → ``☐``/``☑``, a rule → a line, a table → ``*head* |
*head*`` and ``cell | cell`` rows. Code, quotes, ordered lists and line breaks stay as written.
Text nested deeper than ``MAX_DEPTH`` (no answer does that) goes out as written, escaped.

Hand-written over a parser because no mrkdwn library is linear: ``markdown-to-mrkdwn`` ran its
regexes in cubic time (4 000 characters of ``"[a]("``: 12 s), ``md2mrkdwn`` is regex-based too and
``slackify-markdown`` escapes in quadratic time and lets ``<!channel>`` through. Every piece
of the agent's text is escaped (``&``, ``<``, ``>``), so it can never mention or link anyone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyromark

__all__ = ["MAX_DEPTH", "escape", "to_mrkdwn"]

OPTIONS = (
    pyromark.Options.ENABLE_TABLES
    | pyromark.Options.ENABLE_STRIKETHROUGH
    | pyromark.Options.ENABLE_TASKLISTS
)
MAX_DEPTH = 32
RULE = "─" * 10
BULLET = "•"
_MARKS = {"Emphasis": "_", "Strong": "*", "Strikethrough": "~"}
# How much of the source between a node's children is copied: blocks copy all of it
# (indentation, quote marks, fence lines); inline marks, links, headings and cells drop their
# opening and closing marks; table frames drop the pipes and the delimiter row.
_ALL, _INNER, _NONE = 0, 1, 2
_GAPS = dict.fromkeys(("Table", "TableHead", "TableRow"), _NONE) | dict.fromkeys(
    ("Heading", "Link", "Image", "TableCell", *_MARKS), _INNER
)


class TooDeep(Exception):
    """The Markdown nests deeper than ``MAX_DEPTH``."""


@dataclass(slots=True)
class _Frame:
    tag: str
    end: int
    gaps: int
    close: str = ""
    seen_child: bool = False
    bullet: bool = False  # a list of bullets, not numbers
    mutes: bool = False  # an image or autolink, already written as ``<url>``
    cells: int = 0  # a table row's cells so far
    mark: int = -1  # where a link's text starts in the output (an empty one is ``<url>``)
    url: str = ""


@dataclass(slots=True)
class _Writer:
    """One pass over the events; every step is O(1) plus the text it copies."""

    data: bytes
    out: list[str] = field(default_factory=list)
    stack: list[_Frame] = field(default_factory=list)
    cursor: int = 0
    muted: int = 0
    links: int = 0
    headings: int = 0

    def emit(self, text: str) -> None:
        if not self.muted:
            self.out.append(text)

    def gap_to(self, start: int) -> None:
        """Copy (or drop) the source between the last event and one starting at ``start``."""
        if self.stack:
            frame = self.stack[-1]
            gaps = frame.gaps
            copy = gaps == _ALL or (gaps == _INNER and frame.seen_child)
            frame.seen_child = True
        else:
            copy = True
        if start > self.cursor:
            if copy:
                self.emit(escape(self.data[self.cursor : start].decode()))
            self.cursor = start

    def leaf(self, kind: str, value: object, start: int, end: int) -> None:
        self.gap_to(start)
        if kind == "Text":
            self.emit(escape(self.data[start:end].decode()))
        elif kind in ("SoftBreak", "HardBreak"):
            self.emit("\n")
        elif kind == "Rule":
            self.emit(RULE + self._newline(end))
        elif kind == "TaskListMarker":
            self.emit("☑" if value else "☐")
        else:  # code, html: as written
            self.emit(escape(self.data[start:end].decode()))
        self.cursor = end

    def start(self, kind: str, value: object, start: int, end: int) -> None:
        self.gap_to(start)
        if len(self.stack) >= MAX_DEPTH:
            raise TooDeep
        frame = _Frame(kind, end, _GAPS.get(kind, _ALL))
        self.stack.append(frame)
        if kind in _MARKS:
            if not (kind == "Strong" and self.headings):  # a heading is bold already
                frame.close = _MARKS[kind]
                self.emit(frame.close)
        elif kind == "Item":
            if self.stack[-2].bullet and self.data[start : start + 1] in b"-*+":
                self.emit(BULLET)
                self.cursor = start + 1
        elif kind == "List":
            frame.bullet = value is None
        elif kind == "Heading":
            self.headings += 1
            self.emit("*")
            frame.close = "*" + self._newline(end)
        elif kind in ("Link", "Image") and isinstance(value, dict):
            self._link(frame, value)
        elif kind in ("TableRow", "TableCell"):
            self._table(frame)

    def end(self) -> None:
        frame = self.stack.pop()
        if frame.gaps == _ALL and frame.end > self.cursor:
            self.emit(escape(self.data[self.cursor : frame.end].decode()))
        if frame.mutes:
            self.muted -= 1
        elif frame.tag == "Link":
            self.links -= 1
            if frame.mark == len(self.out):  # no text: ``<url>``
                self.out[-1] = f"<{frame.url}>"
                frame.close = ""
        elif frame.tag == "Heading":
            self.headings -= 1
        elif frame.tag == "Table":
            frame.close = self._newline(frame.end)
        self.emit(frame.close)
        self.cursor = max(self.cursor, frame.end)

    def _link(self, frame: _Frame, link: dict[str, object]) -> None:
        url = _url(str(link.get("dest_url") or ""))
        kind = link.get("link_type")
        if frame.tag == "Image" and self.links:
            return  # an image inside a link shows its alt text
        if frame.tag == "Image" or kind == "Autolink":
            self.emit(f"<{url}>")
            self.muted += 1
            frame.mutes = True
            return
        self.links += 1
        self.emit(f"<mailto:{url}|" if kind == "Email" else f"<{url}|")
        frame.close, frame.url = ">", url
        frame.mark = -1 if self.muted else len(self.out)

    def _table(self, frame: _Frame) -> None:
        parent = self.stack[-2]
        if frame.tag == "TableRow":
            self.emit("\n")
            return
        if parent.cells:
            self.emit(" | ")
        parent.cells += 1
        if parent.tag == "TableHead":
            self.emit("*")
            frame.close = "*"

    def _newline(self, end: int) -> str:
        return "\n" if self.data[end - 1 : end] == b"\n" else ""


def escape(text: str) -> str:
    """Slack parses ``&``, ``<`` and ``>`` in text fields; they must be entities."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _url(url: str) -> str:
    """A link target that cannot end the ``<url|text>`` form early."""
    return escape(url).replace("|", "%7C").replace(" ", "%20")


def _split(tag: object) -> tuple[str, object]:
    """A tag with data: ``{"Heading": {...}}`` → ``("Heading", {...})``."""
    if isinstance(tag, dict):
        ((key, value),) = tag.items()
        return str(key), value
    return str(tag), None


def to_mrkdwn(markdown: str) -> str:
    """``markdown`` in Slack's mrkdwn dialect, in time linear in its length."""
    text = markdown.strip()
    writer = _Writer(text.encode())
    try:
        for event, where in pyromark.events_with_range(text, options=OPTIONS):
            start, end = where["start"], where["end"]
            if isinstance(event, str):  # SoftBreak, HardBreak, Rule
                writer.leaf(event, None, start, end)
                continue
            ((kind, value),) = event.items()
            if kind == "Start":
                tag, detail = (value, None) if isinstance(value, str) else _split(value)
                writer.start(tag, detail, start, end)
            elif kind == "End":
                writer.end()
            else:
                writer.leaf(kind, value, start, end)
    except TooDeep:
        return escape(text)
    writer.gap_to(len(writer.data))
    return "".join(writer.out)
