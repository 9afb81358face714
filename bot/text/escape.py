"""Untrusted text made safe to show: in a log line, a terminal, an error text.

A stranger's name, a file name the model chose or a request body can carry newlines (a forged
log line), terminal escapes (a retitled window, a rewritten table row), bidirectional overrides
(text that reads differently than it is) or sheer length. ``escape_controls`` shows each such
character visibly (``\\n``, ``\\x1b``, ``\\u202e``) instead; backslashes are left alone so
escaping twice changes nothing.
"""

from __future__ import annotations

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_UNICODE_CONTROLS = (0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0xFEFF)
"""Line and paragraph separators, bidirectional embeddings, overrides and isolates, and the BOM."""


def _escape_table(*, keep_newline: bool) -> dict[int, str]:
    table: dict[int, str] = {}
    for code in (*range(0x20), *range(0x7F, 0xA0)):
        char = chr(code)
        table[code] = _NAMED.get(char, f"\\x{code:02x}")
    table.update({code: f"\\u{code:04x}" for code in _UNICODE_CONTROLS})
    if keep_newline:
        del table[ord("\n")], table[ord("\t")]
    return table


_ONE_LINE = _escape_table(keep_newline=False)
_LINES = _escape_table(keep_newline=True)
_JSON_RAW = {code: f"\\u{code:04x}" for code in (*range(0x7F, 0xA0), *_UNICODE_CONTROLS)}


def escape_controls(text: str) -> str:
    """One line: every control, separator and bidi character shown as an escape."""
    return text.translate(_ONE_LINE)


def escape_lines(text: str) -> str:
    """Like ``escape_controls`` but newlines (and tabs) stay: for output of several lines."""
    return text.translate(_LINES)


def escape_json_text(dumped: str) -> str:
    """``json.dumps(..., ensure_ascii=False)`` output with DEL, C1 controls, separators and bidi
    characters written as ``\\uXXXX``: the same JSON value, harmless on a terminal. (Those
    characters can only occur inside JSON strings, where the escape means the same.)"""
    return dumped.translate(_JSON_RAW)


def bound(text: str, limit: int) -> str:
    """At most ``limit`` characters, then how many were cut: ``…(+N chars)``."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…(+{len(text) - limit} chars)"
