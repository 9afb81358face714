"""Splitting Markdown into pieces that fit a platform's message limit (design §8 Length).

A chunk is cut at the best break that still fits, in this order of preference: a paragraph or
code-block boundary, a line break, a run of spaces, and finally any character (never inside a
code point, and not between a character and the combining marks or joiners that follow it).
A cut inside a fenced code block closes the fence at the end of the chunk and reopens it, with
the same fence and info string, at the start of the next; the added lines count toward the
limit. A fence whose own opening and closing lines leave no room for content under a very small
limit is split as plain text.

Everything is measured in the platform's unit (``TextUnit``): Telegram counts UTF-16 code units,
so one emoji outside the Basic Multilingual Plane costs two.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from itertools import accumulate, repeat

from bot.ports import TextUnit

__all__ = ["measure", "split_markdown"]

_MAX_CODE_POINT = {TextUnit.CHARS: 1, TextUnit.UTF16: 2, TextUnit.UTF8_BYTES: 4}
_OPEN = re.compile(r"(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)")
_CLOSE = re.compile(r"[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*")
_SPACES = re.compile(r"[ \t]+")
_BLANK_LINES = re.compile(r"(?:[ \t]*\n)+")
_JOINERS = frozenset("\u200c\u200d\ufe0e\ufe0f")

# Break levels, best first: a paragraph or code-block edge, a blank line inside a code block,
# a line break, a run of spaces. A cut anywhere else is level 0.
_PARAGRAPH, _CODE_PARAGRAPH, _LINE, _SPACE = 4, 3, 2, 1


def measure(text: str, unit: TextUnit) -> int:
    """The length of ``text`` as the platform counts it."""
    if unit is TextUnit.UTF16:
        return len(text.encode("utf-16-le", "surrogatepass")) // 2
    if unit is TextUnit.UTF8_BYTES:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text)


def split_markdown(text: str, limit: int, unit: TextUnit = TextUnit.CHARS) -> tuple[str, ...]:
    """Split ``text`` into chunks that each measure at most ``limit`` in ``unit``.

    Leading and trailing blank lines of each chunk are dropped, as is the whitespace at a cut;
    otherwise joining the chunks gives back the text plus the fence lines added at cuts.
    Empty or blank input gives ``()``. ``limit`` must hold the widest code point of ``unit``.
    """
    if limit < _MAX_CODE_POINT[unit]:
        raise ValueError(f"limit {limit} is below one character in {unit} units")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        return ()
    if text[0].strip() and text[-1].strip() and measure(text, unit) <= limit:
        return (text,)  # most replies: one chunk with no blank lines to trim
    return _Splitter(text, limit, unit).chunks()


# --------------------------------------------------------------------------- layout


class _Kind(Enum):
    PROSE = "prose"
    BLANK = "blank"
    OPEN = "open"
    CONTENT = "content"
    CLOSE = "close"


@dataclass(frozen=True, slots=True)
class _Fence:
    """A fenced code block that can be closed and reopened within the limit."""

    start: int  # offset of the opening line
    content_start: int  # offset just after the opening line's newline
    content_end: int  # offset of the closing line, or len(text) when never closed
    opener: str  # the opening line as written, trailing whitespace removed
    closer: str  # the closing line as written, or indent + fence when never closed
    reopen_cost: int  # measure(opener + "\n")
    close_cost: int  # measure("\n" + closer)


@dataclass(frozen=True, slots=True)
class _Break:
    end: int  # the chunk before the break ends here
    next_start: int  # the next chunk starts here
    level: int


def _find_fences(lines: list[str]) -> list[tuple[int, int | None, str, str]]:
    """(opening index, closing index or None, opener, closer) of every fenced block."""
    found: list[tuple[int, int | None, str, str]] = []
    i = 0
    while i < len(lines):
        m = _OPEN.fullmatch(lines[i])
        if m is None or (m["fence"][0] == "`" and "`" in m["info"]):
            i += 1
            continue
        fence = m["fence"]
        close = next((j for j in range(i + 1, len(lines)) if _closes(lines[j], fence)), None)
        closer = m["indent"] + fence if close is None else lines[close].rstrip()
        found.append((i, close, lines[i].rstrip(), closer))
        i = len(lines) if close is None else close + 1
    return found


def _closes(line: str, fence: str) -> bool:
    m = _CLOSE.fullmatch(line)
    return m is not None and m["fence"][0] == fence[0] and len(m["fence"]) >= len(fence)


class _Splitter:
    """One split: the text with its line kinds, break candidates and prefix sums of size."""

    def __init__(self, text: str, limit: int, unit: TextUnit) -> None:
        self.limit = limit
        self.unit = unit
        raw_lines = text.split("\n")
        found = _find_fences(raw_lines)
        for opening, closing, opener, closer in found:  # fence lines lose trailing blanks
            raw_lines[opening] = opener
            if closing is not None:
                raw_lines[closing] = closer
        self.text = "\n".join(raw_lines)
        self.cum = [0, *accumulate(_sizes(self.text, unit))]
        starts = list(accumulate((len(line) + 1 for line in raw_lines[:-1]), initial=0))
        self.line_starts = starts
        self.line_ends = [start + len(line) for start, line in zip(starts, raw_lines, strict=True)]
        self.kinds = [_Kind.BLANK if not line.strip() else _Kind.PROSE for line in raw_lines]
        self.fences = [f for spec in found if (f := self._mark_fence(spec)) is not None]
        self.fence_starts = [f.content_start for f in self.fences]
        breaks = sorted(self._breaks(), key=lambda b: b.end)
        self.breaks = breaks
        self.break_ends = [b.end for b in breaks]

    def _mark_fence(self, spec: tuple[int, int | None, str, str]) -> _Fence | None:
        """Mark a fence's lines, unless the limit cannot hold its fence lines plus content."""
        opening, closing, opener, closer = spec
        reopen_cost = measure(opener + "\n", self.unit)
        close_cost = measure("\n" + closer, self.unit)
        if reopen_cost + close_cost + _MAX_CODE_POINT[self.unit] > self.limit:
            return None
        last = len(self.kinds) - 1 if closing is None else closing - 1
        self.kinds[opening] = _Kind.OPEN
        for i in range(opening + 1, last + 1):
            self.kinds[i] = _Kind.CONTENT
        if closing is not None:
            self.kinds[closing] = _Kind.CLOSE
        end_of_open = self.line_ends[opening]
        return _Fence(
            start=self.line_starts[opening],
            content_start=min(end_of_open + 1, len(self.text)),
            content_end=len(self.text) if closing is None else self.line_starts[closing],
            opener=opener,
            closer=closer,
            reopen_cost=reopen_cost,
            close_cost=close_cost,
        )

    def _breaks(self) -> list[_Break]:
        breaks: list[_Break] = []
        for i, kind in enumerate(self.kinds):
            start, end = self.line_starts[i], self.line_ends[i]
            if kind in (_Kind.PROSE, _Kind.CONTENT):
                breaks.extend(
                    _Break(end=m.start(), next_start=m.end(), level=_SPACE)
                    for m in _SPACES.finditer(self.text, start, end)
                    if m.start() > start
                )
            if i + 1 < len(self.kinds) and (level := self._newline_level(i)):
                breaks.append(_Break(end=end, next_start=end + 1, level=level))
        return breaks

    def _newline_level(self, i: int) -> int:
        """How good a cut the newline after line ``i`` is; 0 means not a cut at all."""
        here, after = self.kinds[i], self.kinds[i + 1]
        if here is _Kind.OPEN or after is _Kind.CLOSE:
            return 0  # a chunk of only an opening line, or a reopened fence with no content
        if _Kind.BLANK in (here, after) or here is _Kind.CLOSE or after is _Kind.OPEN:
            return _PARAGRAPH
        if here is _Kind.CONTENT and (self._is_blank(i) or self._is_blank(i + 1)):
            return _CODE_PARAGRAPH
        return _LINE

    def _is_blank(self, i: int) -> bool:
        return not self.text[self.line_starts[i] : self.line_ends[i]].strip()

    # ----------------------------------------------------------------------- splitting

    def chunks(self) -> tuple[str, ...]:
        out: list[str] = []
        start = self._skip_blank(0)
        end_of_text = len(self.text)
        while start < end_of_text:
            if self._cost(start, end_of_text) <= self.limit:
                cut = _Break(end=end_of_text, next_start=end_of_text, level=_PARAGRAPH)
            else:
                cut = self._best_break(start)
            if chunk := self._render(start, cut.end):
                out.append(chunk)
            start = self._skip_blank(cut.next_start)
        return tuple(out)

    def _cost(self, start: int, end: int) -> int:
        """An upper bound of the rendered size of ``text[start:end]``."""
        cost = self.cum[end] - self.cum[start]
        if (opened := self._fence_at(start)) is not None:
            cost += opened.reopen_cost
        if end < len(self.text) and (unclosed := self._fence_at(end)) is not None:
            cost += unclosed.close_cost
        return cost

    def _fence_at(self, pos: int) -> _Fence | None:
        """The fence whose content range ``[content_start, content_end)`` holds ``pos``."""
        i = bisect_right(self.fence_starts, pos) - 1
        if i >= 0 and pos < self.fences[i].content_end:
            return self.fences[i]
        return None

    def _best_break(self, start: int) -> _Break:
        """The highest-level break that fits, farthest along on a tie; else a hard cut."""
        reach = bisect_right(self.cum, self.cum[start] + self.limit) - 1
        best: _Break | None = None
        first = bisect_right(self.break_ends, start)
        last = bisect_right(self.break_ends, reach)
        for brk in self.breaks[first:last]:
            if self._cost(start, brk.end) > self.limit:
                continue
            if best is None or brk.level >= best.level:
                best = brk
        if best is not None:
            return best
        return self._hard_break(start, reach)

    def _hard_break(self, start: int, reach: int) -> _Break:
        """The farthest position inside a line that fits, preferring grapheme boundaries."""
        fallback: int | None = None
        for pos in range(min(reach, len(self.text) - 1), start, -1):
            if not self._inside_line(pos) or self._cost(start, pos) > self.limit:
                continue
            if not _continues_cluster(self.text[pos - 1], self.text[pos]):
                return _Break(end=pos, next_start=pos, level=0)
            fallback = pos if fallback is None else fallback
        pos = start + 1 if fallback is None else fallback  # unreachable for limit >= 1 char
        return _Break(end=pos, next_start=pos, level=0)

    def _inside_line(self, pos: int) -> bool:
        i = bisect_right(self.line_starts, pos) - 1
        return self.kinds[i] in (_Kind.PROSE, _Kind.CONTENT) and (
            self.line_starts[i] < pos < self.line_ends[i]
        )

    def _skip_blank(self, pos: int) -> int:
        """Move past blank lines; past a closing fence line too if its content was all sent."""
        fence = self._fence_at(pos)
        if m := _BLANK_LINES.match(self.text, pos):
            pos = m.end()
        if fence is not None and pos == fence.content_end and pos < len(self.text):
            i = bisect_left(self.line_starts, pos)
            pos = self._skip_blank(self.line_ends[i])
        return pos

    def _render(self, start: int, end: int) -> str:
        opened = self._fence_at(start)
        unclosed = self._fence_at(end) if end < len(self.text) else None
        if unclosed is not None and not self.text[max(start, unclosed.content_start) : end].strip():
            # None of that block's content is in this chunk: the next chunk opens it instead.
            if opened is unclosed:
                return ""
            end, unclosed = unclosed.start, None
        body = self.text[start:end].rstrip()
        if not body.strip():
            return ""
        head = opened.opener + "\n" if opened is not None else ""
        tail = "\n" + unclosed.closer if unclosed is not None else ""
        return head + body + tail


def _sizes(text: str, unit: TextUnit) -> Iterable[int]:
    """``measure`` of each character, without encoding them one by one."""
    if unit is TextUnit.UTF16:
        return (2 if char > "\uffff" else 1 for char in text)
    if unit is TextUnit.UTF8_BYTES:
        return (
            1 if char < "\x80" else 2 if char < "\u0800" else 3 if char <= "\uffff" else 4
            for char in text
        )
    return repeat(1, len(text))


def _continues_cluster(before: str, char: str) -> bool:
    """Whether ``char`` belongs to the character ``before`` it (combining mark, joiner...)."""
    return (
        before == "\u200d"
        or unicodedata.combining(char) != 0
        or char in _JOINERS
        or "\U0001f3fb" <= char <= "\U0001f3ff"
        or unicodedata.category(char) == "Me"
    )
