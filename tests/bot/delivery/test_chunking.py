"""Splitting Markdown for platform limits (design §8 Length)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.delivery.chunking import measure, split_markdown
from bot.ports import TextUnit

FENCE_LINE = re.compile(r"[ \t]*(`{3,}|~{3,}).*")
EMOJI = "😀"  # outside the BMP: 1 char, 2 UTF-16 units, 4 UTF-8 bytes
FAMILY = "👨\u200d👩\u200d👧"


def fence_state_after(chunk: str) -> str | None:
    """The fence still open at the end of ``chunk`` (CommonMark rules), or None."""
    open_fence: str | None = None
    for line in chunk.split("\n"):
        stripped = line.strip()
        if open_fence is None:
            m = re.fullmatch(r"(`{3,}|~{3,})(.*)", stripped)
            if m and not (m[1][0] == "`" and "`" in m[2]):
                open_fence = m[1]
        elif (
            re.fullmatch(r"(`{3,}|~{3,})", stripped)
            and stripped[0] == open_fence[0]
            and len(stripped) >= len(open_fence)
        ):
            open_fence = None
    return open_fence


def without_fences_and_space(text: str) -> str:
    kept = [line for line in text.split("\n") if not FENCE_LINE.fullmatch(line)]
    return re.sub(r"\s+", "", "".join(kept))


def check_chunks(text: str, chunks: tuple[str, ...], limit: int, unit: TextUnit) -> None:
    assert all(measure(chunk, unit) <= limit for chunk in chunks)
    for chunk in chunks:
        assert chunk.strip()
        assert chunk == chunk.rstrip()
        assert chunk.split("\n", 1)[0].strip(), "leading blank line"
    assert without_fences_and_space("\n".join(chunks)) == without_fences_and_space(text)
    text_unclosed = fence_state_after(text) is not None
    for chunk in chunks[:-1]:
        assert fence_state_after(chunk) is None, chunk
    if chunks and not text_unclosed:
        assert fence_state_after(chunks[-1]) is None


# --------------------------------------------------------------------------- measure


def test_measure_units() -> None:
    text = "aé中" + EMOJI
    assert measure(text, TextUnit.CHARS) == 4
    assert measure(text, TextUnit.UTF16) == 5
    assert measure(text, TextUnit.UTF8_BYTES) == 1 + 2 + 3 + 4


# --------------------------------------------------------------------------- examples


def test_empty_and_blank_input() -> None:
    assert split_markdown("", 10) == ()
    assert split_markdown(" \n\n\t\n", 10) == ()


def test_short_text_is_one_trimmed_chunk() -> None:
    assert split_markdown("\n\nhello\n\n", 100) == ("hello",)


def test_limit_below_one_character_is_refused() -> None:
    with pytest.raises(ValueError, match="limit"):
        split_markdown("abc", 3, TextUnit.UTF8_BYTES)


def test_paragraph_boundary_preferred() -> None:
    first = "First paragraph has some words.\nAnd a second line."
    second = "Second paragraph is here."
    third = "Third one."
    text = f"{first}\n\n{second}\n\n\n{third}"
    assert split_markdown(text, len(first) + 5) == (first, f"{second}\n\n\n{third}")


def test_line_then_space_then_hard() -> None:
    assert split_markdown("aaaa bbbb\ncccc dddd", 12) == ("aaaa bbbb", "cccc dddd")
    assert split_markdown("aaaa bbbb cccc", 10) == ("aaaa bbbb", "cccc")
    assert split_markdown("abcdefghij", 4) == ("abcd", "efgh", "ij")


def test_fence_closed_and_reopened_with_info_string() -> None:
    code = "\n".join(f"x = {i}" for i in range(12))
    text = f"Intro.\n\n```python\n{code}\n```\n\nOutro."
    chunks = split_markdown(text, 40)
    check_chunks(text, chunks, 40, TextUnit.CHARS)
    middle = [c for c in chunks if "x = " in c]
    assert len(middle) > 1
    for chunk in middle:
        assert chunk.startswith("```python\n")
        assert chunk.endswith("\n```") or chunk.endswith("Outro.")
    assert chunks[0] == "Intro."


def test_tilde_and_long_fences_keep_their_markers() -> None:
    body = "\n".join("```not a fence inside" if i == 3 else f"line {i}" for i in range(10))
    text = f"~~~~ text\n{body}\n~~~~"
    chunks = split_markdown(text, 45)
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.startswith("~~~~ text\n")
        assert chunk.endswith("\n~~~~")
        assert measure(chunk, TextUnit.CHARS) <= 45


def test_blank_line_inside_code_preferred_over_line_break() -> None:
    text = "```py\ndef f():\n    return 1\n\ndef g():\n    return 2\n```"
    assert split_markdown(text, 40) == (
        "```py\ndef f():\n    return 1\n```",
        "```py\ndef g():\n    return 2\n```",
    )


def test_unclosed_fence_is_closed_between_chunks_but_not_at_the_end() -> None:
    text = "```sh\n" + "\n".join(f"echo {i}" for i in range(10))
    chunks = split_markdown(text, 30)
    check_chunks(text, chunks, 30, TextUnit.CHARS)
    assert all(c.startswith("```sh\n") for c in chunks)
    assert all(c.endswith("\n```") for c in chunks[:-1])
    assert not chunks[-1].endswith("```")


def test_one_long_line_without_spaces() -> None:
    text = "x" * 10_000
    chunks = split_markdown(text, 20)
    assert len(chunks) == 500
    assert "".join(chunks) == text


def test_emoji_are_never_cut_in_half() -> None:
    text = EMOJI * 101
    for unit, per_chunk in ((TextUnit.UTF16, 2), (TextUnit.UTF8_BYTES, 1), (TextUnit.CHARS, 5)):
        limit = 5 if unit is not TextUnit.UTF8_BYTES else 7
        chunks = split_markdown(text, limit, unit)
        assert "".join(chunks) == text
        assert all(len(c) <= per_chunk for c in chunks)


def test_combining_marks_and_joiners_stay_with_their_character() -> None:
    text = "a" + "e\u0301" * 9
    for chunk in split_markdown(text, 4):
        assert not chunk.startswith("\u0301")
    family_text = FAMILY * 10
    chunks = split_markdown(family_text, 20, TextUnit.UTF16)
    assert "".join(chunks) == family_text
    for chunk in chunks:
        assert not chunk.startswith("\u200d")
        assert not chunk.endswith("\u200d")


def test_fence_too_wide_for_the_limit_is_split_as_text() -> None:
    text = "```averyveryverylonginfostring\nprint(1)\n```"
    chunks = split_markdown(text, 12)
    assert all(measure(c, TextUnit.CHARS) <= 12 for c in chunks)
    assert re.sub(r"\s+", "", "".join(chunks)) == re.sub(r"\s+", "", text)


def test_code_block_longer_than_many_chunks() -> None:
    code = "\n".join(f"    value_{i} = compute({i}, {EMOJI})" for i in range(400))
    text = f"Before.\n\n```python\n{code}\n```\nAfter."
    chunks = split_markdown(text, 200, TextUnit.UTF16)
    assert len(chunks) > 30
    check_chunks(text, chunks, 200, TextUnit.UTF16)
    assert all(c.startswith("```python\n") for c in chunks[1:])


def test_ten_thousand_characters_with_emoji_and_fences() -> None:
    parts = []
    for i in range(60):
        parts.append(f"Paragraph {i} {EMOJI} " + "lorem ipsum dolor sit amet " * 4)
        if i % 7 == 0:
            parts.append(
                "```js\n" + "\n".join(f"let v{j} = '{FAMILY}';" for j in range(30)) + "\n```"
            )
    text = "\n\n".join(parts)
    assert len(text) > 10_000
    for unit, limit in ((TextUnit.UTF16, 4096), (TextUnit.UTF8_BYTES, 1000), (TextUnit.CHARS, 300)):
        chunks = split_markdown(text, limit, unit)
        check_chunks(text, chunks, limit, unit)


def test_crlf_is_normalised() -> None:
    assert split_markdown("a\r\n\r\nb", 2) == ("a", "b")


# --------------------------------------------------------------------------- properties

# A fixed vocabulary keeps generation cheap; it mixes widths in every unit, combining marks,
# joiners, Markdown punctuation and words longer than small limits.
WORD = st.sampled_from(
    [
        "a",
        "lorem",
        "ipsum",
        "中文字",
        "e\u0301te",
        EMOJI,
        FAMILY,
        "**bold**",
        "_it_",
        "#",
        "`x`",
        "x" * 45,
        EMOJI * 12,
        "naïve",
    ]
)
PROSE_LINE = st.lists(WORD, min_size=1, max_size=12).map(" ".join)
PARAGRAPH = st.lists(PROSE_LINE, min_size=1, max_size=5).map("\n".join)
CODE_LINE = st.builds(
    lambda indent, words: " " * indent + " ".join(words),
    st.integers(0, 8),
    st.lists(WORD, max_size=8),
)
FENCE = st.builds(
    lambda marker, info, lines, closed: (
        f"{marker}{info}\n" + "\n".join(lines) + (f"\n{marker}" if closed else "")
    ),
    st.sampled_from(["```", "~~~", "````"]),
    st.sampled_from(["", "python", "js", " text"]),
    st.lists(CODE_LINE, max_size=40),
    st.booleans(),
)
BLOCKS = st.lists(st.one_of(PARAGRAPH, PARAGRAPH, FENCE), min_size=1, max_size=8)


@st.composite
def markdown(draw: st.DrawFn) -> str:
    blocks = draw(BLOCKS)
    # An unclosed fence swallows everything after it, so only the last block may stay open.
    blocks = [
        f"{b}\n{fence_state_after(b)}" if i < len(blocks) - 1 and fence_state_after(b) else b
        for i, b in enumerate(blocks)
    ]
    separators = draw(st.lists(st.sampled_from(["\n", "\n\n", "\n\n\n"]), min_size=len(blocks)))
    return "".join(b + s for b, s in zip(blocks, separators, strict=False))


@settings(max_examples=150, deadline=None)
@given(
    text=markdown(),
    limit=st.integers(20, 300),
    unit=st.sampled_from(list(TextUnit)),
)
def test_split_respects_limits_fences_and_content(text: str, limit: int, unit: TextUnit) -> None:
    chunks = split_markdown(text, limit, unit)
    check_chunks(text, chunks, limit, unit)
    assert chunks == split_markdown(text, limit, unit)


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=400), limit=st.integers(4, 50), unit=st.sampled_from(list(TextUnit)))
def test_split_arbitrary_text_terminates_within_limit(
    text: str, limit: int, unit: TextUnit
) -> None:
    chunks = split_markdown(text, limit, unit)
    assert all(measure(chunk, unit) <= limit for chunk in chunks)
    assert all(chunk.strip() for chunk in chunks)
