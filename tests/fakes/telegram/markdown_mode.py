"""``parse_mode=MarkdownV2`` and legacy ``Markdown`` as Telegram's server parses them.

MarkdownV2 follows tdlib's ``parse_markdown_v2``: every one of ``_*[]()~`>#+-=|{}.!`` outside
an entity marker must be escaped with ``\\``, inside code and pre only ``` ` ``` and ``\\``, and
every entity must be closed. A ``>`` at the start of a line opens a block quote.
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.fakes.telegram.errors import cant_parse
from tests.fakes.telegram.text import Formatted, Mark, TextBuilder

_RESERVED = frozenset("_*[]()~`>#+-=|{}.!")
_CODE_RESERVED = frozenset("`")
_TYPE_NAMES = {
    "bold": "Bold", "italic": "Italic", "underline": "Underline", "strikethrough": "Strikethrough",
    "spoiler": "Spoiler", "code": "Code", "pre": "Pre", "text_link": "TextUrl",
    "custom_emoji": "CustomEmoji",
}  # fmt: skip
_SPACES = frozenset(" \t\r\n\x0b\x00")


@dataclass(slots=True)
class _Open:
    kind: str
    byte_offset: int
    mark: Mark
    language: str = ""


class _V2Parser:
    def __init__(self, source: str) -> None:
        self.src = source
        self.out = TextBuilder()
        self.stack: list[_Open] = []
        self.quote: Mark | None = None

    def ch(self, index: int) -> str:
        return self.src[index] if 0 <= index < len(self.src) else ""

    def run(self) -> Formatted:
        i = 0
        while i < len(self.src):
            i = self.step(i)
        if self.quote is not None:
            self.out.entity("blockquote", self.quote)
        if self.stack:
            entry = self.stack[-1]
            name = _TYPE_NAMES[entry.kind]
            raise cant_parse(f"Can't find end of {name} entity at byte offset {entry.byte_offset}")
        return self.out.finish()

    def step(self, i: int) -> int:
        char, top = self.src[i], self.stack[-1].kind if self.stack else None
        in_code = top in ("code", "pre")
        if not in_code and (i == 0 or self.src[i - 1] == "\n"):
            self.line_start(char)
        if char == "\\" and 0 < ord(self.ch(i + 1) or "\x00") <= 126:
            self.out.add(self.src[i + 1])
            return i + 2
        if char not in (_CODE_RESERVED if in_code else _RESERVED):
            self.out.add(char)
            return i + 1
        if char == ">" and not in_code and (i == 0 or self.src[i - 1] == "\n"):
            return i + 1  # the block quote marker itself
        if top is not None and self.ends(top, i):
            return self.close(i)
        return self.open(i)

    def line_start(self, char: str) -> None:
        """Opens or closes the block quote that ``>``-prefixed lines form."""
        if char == ">" and self.quote is None:
            self.quote = self.out.mark()
        elif char != ">" and self.quote is not None:
            self.out.entity("blockquote", self.quote)
            self.quote = None

    def ends(self, kind: str, i: int) -> bool:
        char, after = self.src[i], self.ch(i + 1)
        return {
            "bold": char == "*",
            "italic": char == "_" and after != "_",
            "underline": char == "_" and after == "_",
            "strikethrough": char == "~",
            "spoiler": char == "|" and after == "|",
            "code": char == "`",
            "pre": self.src[i : i + 3] == "```",
            "text_link": char == "]",
            "custom_emoji": char == "]",
        }[kind]

    def open(self, i: int) -> int:
        char, after, byte_offset = self.src[i], self.ch(i + 1), len(self.src[:i].encode())
        simple = {"*": "bold", "~": "strikethrough", "[": "text_link"}
        if char in simple:
            kind, i = simple[char], i + 1
        elif char == "_":
            kind, i = ("underline", i + 2) if after == "_" else ("italic", i + 1)
        elif char == "|" and after == "|":
            kind, i = "spoiler", i + 2
        elif char == "!" and after == "[":
            kind, i = "custom_emoji", i + 2
        elif char == "`" and self.src[i : i + 3] == "```":
            return self.open_pre(i + 3, byte_offset)
        elif char == "`":
            kind, i = "code", i + 1
        else:
            raise cant_parse(
                f"Character '{char}' is reserved and must be escaped with the preceding '\\'"
            )
        self.stack.append(_Open(kind, byte_offset, self.out.mark()))
        return i

    def open_pre(self, i: int, byte_offset: int) -> int:
        end = i
        while self.ch(end) and self.ch(end) not in _SPACES and self.ch(end) != "`":
            end += 1
        language = ""
        if end != i and self.ch(end) and self.ch(end) != "`":
            language, i = self.src[i:end], end
        if self.ch(i) in ("\n", "\r"):
            pair = self.ch(i + 1) in ("\n", "\r") and self.ch(i) != self.ch(i + 1)
            i += 2 if pair else 1
        self.stack.append(_Open("pre", byte_offset, self.out.mark(), language))
        return i

    def close(self, i: int) -> int:
        entry = self.stack.pop()
        kind = entry.kind
        if kind in ("underline", "spoiler"):
            i += 2
        elif kind == "pre":
            i += 3
        elif kind in ("text_link", "custom_emoji"):
            return self.close_link(entry, i)
        else:
            i += 1
        extra = {"language": entry.language} if entry.language else {}
        self.out.entity(kind, entry.mark, **extra)
        return i

    def close_link(self, entry: _Open, i: int) -> int:
        if self.ch(i + 1) != "(":
            if entry.kind == "custom_emoji":
                raise cant_parse("Custom emoji entity must contain a tg://emoji URL")
            self.out.entity("text_link", entry.mark, url=self.out.since(entry.mark))
            return i + 1
        i += 2
        begin, url = i, []
        while i < len(self.src) and self.src[i] != ")":
            if self.src[i] == "\\" and 0 < ord(self.ch(i + 1) or "\x00") <= 126:
                url.append(self.src[i + 1])
                i += 2
                continue
            url.append(self.src[i])
            i += 1
        if self.ch(i) != ")":
            offset = len(self.src[:begin].encode())
            raise cant_parse(f"Can't find end of a URL at byte offset {offset}")
        target = "".join(url)
        if entry.kind == "custom_emoji":
            if not target.startswith("tg://emoji?id="):
                raise cant_parse("Custom emoji entity must contain a tg://emoji URL")
            self.out.entity(
                "custom_emoji", entry.mark, custom_emoji_id=target[len("tg://emoji?id=") :]
            )
        else:
            self.out.entity("text_link", entry.mark, url=target)
        return i + 1


def parse_markdown_v2(source: str) -> Formatted:
    return _V2Parser(source).run()


def parse_markdown(source: str) -> Formatted:
    """Legacy ``Markdown``: ``*bold*``, ``_italic_``, `` `code` ``, ```` ```pre``` ````, links."""
    out, i, n = TextBuilder(), 0, len(source)
    while i < n:
        char = source[i]
        if char == "\\" and source[i + 1 : i + 2] in ("_", "*", "`", "["):
            out.add(source[i + 1])
            i += 2
            continue
        if char not in "_*`[":
            out.add(char)
            i += 1
            continue
        i = _legacy_entity(source, i, out)
    return out.finish()


def _legacy_entity(source: str, begin: int, out: TextBuilder) -> int:
    char = source[begin]
    end_char = "]" if char == "[" else char
    is_pre = source[begin : begin + 3] == "```"
    i = begin + (3 if is_pre else 1)
    language = ""
    if is_pre:
        end = i
        while end < len(source) and source[end] not in _SPACES and source[end] != "`":
            end += 1
        if end != i and end < len(source) and source[end] != "`":
            language, i = source[i:end], end
        if source[i : i + 1] in ("\n", "\r"):
            i += 1
    mark = out.mark()
    while i < len(source) and not (
        source[i] == end_char and (not is_pre or source[i : i + 3] == "```")
    ):
        out.add(source[i])
        i += 1
    if i >= len(source):
        offset = len(source[:begin].encode())
        raise cant_parse(f"Can't find end of the entity starting at byte offset {offset}")
    i += 3 if is_pre else 1
    if char == "[":
        url = out.since(mark)
        if source[i : i + 1] == "(" and (close := source.find(")", i)) != -1:
            url, i = source[i + 1 : close], close + 1
        out.entity("text_link", mark, url=url)
    else:
        kind = {"*": "bold", "_": "italic"}.get(char, "pre" if is_pre else "code")
        out.entity(kind, mark, **({"language": language} if language else {}))
    return i
