"""The product code's shape, as the house keeps it: short functions, narrow wiring objects, and
formatting left to the formatter (``docs/design/conventions.md``)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("bot", "channels", "agent", "store")
MAX_FUNCTION_LINES = 60
MAX_WIRING_FIELDS = 8
MAX_FORMAT_SKIPS = 69


def _sources() -> Iterator[tuple[str, str]]:
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")


def _trees() -> Iterator[tuple[str, ast.Module]]:
    for name, text in _sources():
        yield name, ast.parse(text, filename=name)


def test_no_function_is_longer_than_sixty_lines() -> None:
    long = [
        f"{name}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for name, tree in _trees()
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert long == []


def test_the_kernel_and_every_deps_object_have_at_most_eight_fields() -> None:
    wide: list[str] = []
    seen = 0
    for name, tree in _trees():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and (
                node.name == "Kernel" or node.name.endswith("Deps")
            ):
                seen += 1
                fields = [item for item in node.body if isinstance(item, ast.AnnAssign)]
                if len(fields) > MAX_WIRING_FIELDS:
                    wide.append(f"{name}:{node.lineno} {node.name} ({len(fields)} fields)")
    assert seen > 1, "no Kernel or *Deps class found: the check would pass vacuously"
    assert wide == []


def test_format_skips_stay_rare() -> None:
    skips = sum(text.count("# fmt: skip") for _, text in _sources())
    assert skips <= MAX_FORMAT_SKIPS
