"""``parse_mode=HTML`` as Telegram's server parses it (tdlib ``parse_html``).

Only Telegram's tags are accepted, tags must nest and close, and a bare ``<`` is an error. Like
the real parser, an ``&`` that starts no known entity and a bare ``>`` are kept as text.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.fakes.telegram.errors import cant_parse
from tests.fakes.telegram.text import Formatted, Mark, TextBuilder

_TAGS = frozenset(
    {"a", "b", "strong", "i", "em", "s", "strike", "del", "u", "ins", "span", "tg-spoiler",
     "tg-emoji", "code", "pre", "blockquote"}
)  # fmt: skip
_KINDS = {
    "b": "bold", "strong": "bold", "i": "italic", "em": "italic", "s": "strikethrough",
    "strike": "strikethrough", "del": "strikethrough", "u": "underline", "ins": "underline",
    "span": "spoiler", "tg-spoiler": "spoiler", "code": "code", "pre": "pre",
}  # fmt: skip
_SPACES = frozenset(" \t\r\n\x0b\x00")
_NAMED = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}
_MAX_CODE_POINT = 0x10FFFF


@dataclass(slots=True)
class _Open:
    tag: str
    byte_offset: int
    mark: Mark
    attrs: dict[str, str] = field(default_factory=dict)
    expandable: bool = False


class _HtmlParser:
    def __init__(self, source: str) -> None:
        self.src = source
        self.out = TextBuilder()
        self.stack: list[_Open] = []

    def ch(self, index: int) -> str:
        """The character at ``index``, or ``""`` past the end (C's terminating NUL)."""
        return self.src[index] if index < len(self.src) else ""

    def is_space(self, index: int) -> bool:
        return self.ch(index) in _SPACES or not self.ch(index)

    def skip_spaces(self, index: int) -> int:
        while self.ch(index) and self.ch(index) in _SPACES:
            index += 1
        return index

    def byte_offset(self, index: int) -> int:
        return len(self.src[:index].encode())

    def run(self) -> Formatted:
        i = 0
        while i < len(self.src):
            char = self.src[i]
            if char == "&" and (decoded := decode_entity(self.src, i)) is not None:
                self.out.add(decoded[0])
                i = decoded[1]
            elif char != "<":
                self.out.add(char)
                i += 1
            elif self.ch(i + 1) == "/":
                i = self.close_tag(i)
            else:
                i = self.open_tag(i)
        if self.stack:
            tag = self.stack[-1].tag
            raise cant_parse(f'Can\'t find end tag corresponding to start tag "{tag}"')
        return self.out.finish()

    def open_tag(self, begin: int) -> int:
        j = begin + 1
        while not self.is_space(j) and self.ch(j) != ">":
            j += 1
        if not self.ch(j):
            raise cant_parse(f"Unclosed start tag at byte offset {self.byte_offset(begin)}")
        tag = self.src[begin + 1 : j].lower()
        if tag not in _TAGS:
            offset = self.byte_offset(begin)
            raise cant_parse(f'Unsupported start tag "{tag}" at byte offset {offset}')
        entry = _Open(tag, self.byte_offset(begin), (0, 0))
        j = self.attributes(entry, j)
        if tag == "span" and entry.attrs.get("class") != "tg-spoiler":
            offset = entry.byte_offset
            raise cant_parse(f'Tag "span" must have class "tg-spoiler" at byte offset {offset}')
        if tag == "tg-emoji" and not entry.attrs.get("emoji-id"):
            raise cant_parse("Custom emoji entity must contain a tg://emoji URL")
        entry.mark = self.out.mark()
        self.stack.append(entry)
        return j + 1

    def attributes(self, entry: _Open, j: int) -> int:
        """Parses ``name=value`` pairs up to the closing ``>``; returns its index."""
        while self.ch(j) != ">":
            j = self.skip_spaces(j)
            if self.ch(j) == ">":
                break
            name_begin = j
            while not self.is_space(j) and self.ch(j) not in ("=", ">"):
                j += 1
            name = self.src[name_begin:j]
            where = f'the tag "{entry.tag}" at byte offset {entry.byte_offset}'
            if not name:
                raise cant_parse(f"Empty attribute name in {where}")
            j = self.skip_spaces(j)
            if self.ch(j) != "=":
                if entry.tag == "blockquote" and name == "expandable":
                    entry.expandable = True
                    continue
                raise cant_parse(f"Expected equal sign in declaration of an attribute of {where}")
            j = self.skip_spaces(j + 1)
            if not self.ch(j):
                raise cant_parse(f"Unclosed start tag {where}")
            value, j = self.attribute_value(j)
            if not self.ch(j):
                raise cant_parse(f"Unclosed start tag at byte offset {entry.byte_offset}")
            entry.attrs.setdefault(name.lower(), value)
        return j

    def attribute_value(self, j: int) -> tuple[str, int]:
        quote = self.ch(j)
        if quote not in ("'", '"'):
            begin = j
            while self.ch(j) and (
                (self.ch(j).isascii() and self.ch(j).isalnum()) or self.ch(j) in ".-"
            ):
                j += 1
            if not self.is_space(j) and self.ch(j) != ">":
                offset = self.byte_offset(begin)
                raise cant_parse(f"Unexpected end of name token at byte offset {offset}")
            return self.src[begin:j].lower(), j
        j += 1
        value: list[str] = []
        while self.ch(j) and self.ch(j) != quote:
            if self.ch(j) == "&" and (decoded := decode_entity(self.src, j)) is not None:
                value.append(decoded[0])
                j = decoded[1]
            else:
                value.append(self.ch(j))
                j += 1
        if self.ch(j) == quote:
            j += 1
        return "".join(value), j

    def close_tag(self, begin: int) -> int:
        offset = self.byte_offset(begin)
        if not self.stack:
            raise cant_parse(f"Unexpected end tag at byte offset {offset}")
        j = begin + 2
        while not self.is_space(j) and self.ch(j) != ">":
            j += 1
        name = self.src[begin + 2 : j].lower()
        j = self.skip_spaces(j)
        if self.ch(j) != ">":
            raise cant_parse(f"Unclosed end tag at byte offset {offset}")
        entry = self.stack[-1]
        if name and name != entry.tag:
            raise cant_parse(
                f'Unmatched end tag at byte offset {offset}, expected "</{entry.tag}>", '
                f'found "</{name}>"'
            )
        self.stack.pop()
        self.emit(entry)
        return j + 1

    def emit(self, entry: _Open) -> None:
        out, tag = self.out, entry.tag
        if tag == "a":
            out.entity(
                "text_link", entry.mark, url=entry.attrs.get("href") or out.since(entry.mark)
            )
        elif tag == "blockquote":
            out.entity("expandable_blockquote" if entry.expandable else "blockquote", entry.mark)
        elif tag == "tg-emoji":
            out.entity("custom_emoji", entry.mark, custom_emoji_id=entry.attrs["emoji-id"])
        elif tag == "pre" and self._code_language_inside(entry):
            language = out.entities.pop()["language"]
            out.entity("pre", entry.mark, language=language)
        elif tag == "code" and entry.attrs.get("class", "").startswith("language-"):
            out.entity("code", entry.mark, language=entry.attrs["class"][len("language-") :])
        else:
            out.entity(_KINDS[tag], entry.mark)

    def _code_language_inside(self, entry: _Open) -> bool:
        """``<pre><code class="language-x">…</code></pre>`` is one pre entity with a language."""
        if not self.out.entities:
            return False
        last = self.out.entities[-1]
        return (
            last["type"] == "code"
            and "language" in last
            and last["offset"] == entry.mark[1]
            and last["offset"] + last["length"] == self.out.offset
        )


def parse_html(source: str) -> Formatted:
    formatted = _HtmlParser(source).run()
    entities = tuple({k: v for k, v in e.items() if not (e["type"] == "code" and k == "language")}
                     for e in formatted.entities)  # fmt: skip
    return Formatted(formatted.text, entities)


def decode_entity(text: str, pos: int) -> tuple[str, int] | None:
    """Decodes ``&lt;``-style and numeric references; ``None`` keeps the ``&`` literally."""
    j = pos + 1
    if text[j : j + 1] == "#":
        j += 1
        hexadecimal = text[j : j + 1] == "x"
        j += hexadecimal
        digits = "0123456789abcdefABCDEF" if hexadecimal else "0123456789"
        start = j
        while j < len(text) and text[j] in digits:
            j += 1
        value = int(text[start:j], 16 if hexadecimal else 10) if j > start else 0
        if value == 0 or value >= _MAX_CODE_POINT or 0xD800 <= value <= 0xDFFF:
            return None
        char = chr(value)
    else:
        start = j
        while j < len(text) and text[j].isascii() and text[j].isalpha():
            j += 1
        named = _NAMED.get(text[start:j])
        if named is None:
            return None
        char = named
    if text[j : j + 1] == ";":
        j += 1
    return char, j
