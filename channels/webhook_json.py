"""JSON from a webhook body, parsed only after the request was authenticated, and never
nested deeper than ``MAX_DEPTH``.

Python's ``json`` recurses once per level, so a body of 100 000 ``[`` raised
``RecursionError`` (a 500 and a traceback) instead of a 400. The nesting is measured first
with one regular-expression pass over the raw bytes, strings skipped; real platform events are
a few levels deep.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

MAX_DEPTH: Final = 64
_TOKENS: Final = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[{]|[\]}]', re.DOTALL)


class BadBody(ValueError):
    """The body is not a JSON object this module will parse; the text says why."""


def nesting_ok(raw: bytes, max_depth: int = MAX_DEPTH) -> bool:
    """Whether no array or object in ``raw`` sits deeper than ``max_depth``."""
    depth = 0
    for match in _TOKENS.finditer(raw):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            if depth > max_depth:
                return False
        elif token in (b"]", b"}"):
            depth -= 1
    return True


def json_object(raw: bytes, max_depth: int = MAX_DEPTH) -> dict[str, Any]:
    """``raw`` as a JSON object; ``BadBody`` when it is not one, or nests too deep."""
    if not nesting_ok(raw, max_depth):
        raise BadBody(f"JSON nested deeper than {max_depth} levels")
    try:
        data = json.loads(raw)
    except ValueError:  # UnicodeDecodeError too
        raise BadBody("not valid JSON in UTF-8") from None
    if not isinstance(data, dict):
        raise BadBody("not a JSON object")
    return data
