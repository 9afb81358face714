"""The docs keep up with the code: a newcomer can start from them and trust what they name.

- Every module under ``bot/``, ``channels/``, ``agent/`` and ``store/`` is named, by its path, in
  ``docs/design/`` (package ``__init__.py`` files aside: a package is named by its folder, and
  every module in it by its own line). A module nobody named is a room with no door.
- Every ``§N`` the code or the docs cite is a heading in ``docs/design/``: code says
  ``design §N``, and a number that no heading carries sends the reader nowhere. ``SPEC §N`` and
  ``PLATFORMS §N`` cite other documents and are left out.
- The design overview stays short (≤ 200 lines) and the README too (≤ 220 lines), with the two
  quick-start commands first (CI and the black-box checks run them as written).
- Every relative link in the README and ``docs/`` reaches a file, and its ``#anchor`` a heading.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DESIGN = REPO / "docs" / "design"
OVERVIEW = DESIGN / "README.md"
PACKAGES = ("bot", "channels", "agent", "store")

OVERVIEW_MAX_LINES = 200
README_MAX_LINES = 220
QUICK_START = (
    "python3.11 -m venv .venv && .venv/bin/pip install -q -e . && "
    ".venv/bin/switchboard chat -c config/switchboard.example.yaml",
    "./scripts/test",
)
"""The README's two commands, exactly as CI and the black-box checks run them."""

CITING = ("bot", "channels", "agent", "store", "tests", "bench", "scripts", "systemd", "docs")
CITING_SUFFIXES = (".py", ".md", ".yaml", ".service", ".toml", ".sh")
SECTION = re.compile(r"(?<![\w§])§(\d+(?:\.\d+)*)")
OTHER_DOCUMENT = re.compile(r"(SPEC|PLATFORMS)(\.md)?\s*$")
"""``SPEC §10`` and ``PLATFORMS §4`` number other documents' sections."""
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")


def _modules() -> list[str]:
    return [
        path.relative_to(REPO).as_posix()
        for package in PACKAGES
        for path in sorted((REPO / package).rglob("*.py"))
        if path.name != "__init__.py" and "__pycache__" not in path.parts
    ]


def _design_files() -> list[Path]:
    return sorted(DESIGN.glob("*.md"))


@cache
def _design_text() -> str:
    return "\n".join(path.read_text(encoding="utf-8") for path in _design_files())


def _outside_fences(text: str) -> Iterator[str]:
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            yield line


def _headings(path: Path) -> list[str]:
    return [
        match.group(2)
        for line in _outside_fences(path.read_text(encoding="utf-8"))
        if (match := HEADING.match(line))
    ]


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation gone, spaces to hyphens."""
    text = re.sub(r"`|\*\*|__", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    for heading in _headings(path):
        slug = _slug(heading)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def _cited_sections() -> dict[str, list[str]]:
    """Each cited section number → where it is cited (``path:line``)."""
    cited: dict[str, list[str]] = {}
    paths = [REPO / "README.md"]
    for top in CITING:
        paths += [p for p in (REPO / top).rglob("*") if p.suffix in CITING_SUFFIXES]
    for path in paths:
        if "__pycache__" in path.parts or not path.is_file():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in SECTION.finditer(line):
                if OTHER_DOCUMENT.search(line[: match.start()]) or match.group(1).startswith("0"):
                    continue
                where = f"{path.relative_to(REPO).as_posix()}:{number}"
                cited.setdefault(match.group(1), []).append(where)
    return cited


def _section_headings() -> set[str]:
    numbers: set[str] = set()
    for path in _design_files():
        for heading in _headings(path):
            if match := re.match(r"§(\d+(?:\.\d+)*)\s", heading):
                numbers.add(match.group(1))
    return numbers


def _code_blocks(text: str) -> list[str]:
    blocks: list[str] = []
    current: list[str] | None = None
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            if current is None:
                current = []
            else:
                blocks.append("\n".join(current).strip())
                current = None
        elif current is not None:
            current.append(line)
    return blocks


def test_every_module_is_named_in_the_design_docs() -> None:
    text = _design_text()
    missing = [module for module in _modules() if f"`{module}`" not in text]
    assert not missing, (
        "modules not named in docs/design/ (add a line for each to the module map in "
        f"docs/design/layout.md, or name it in its room): {missing}"
    )


def test_the_module_map_names_no_module_that_is_gone() -> None:
    named = set(re.findall(r"`((?:bot|channels|agent|store)/[\w/]+\.py)`", _design_text()))
    gone = sorted(path for path in named if not (REPO / path).is_file())
    assert not gone, f"docs/design/ names modules that do not exist: {gone}"


def test_every_cited_section_is_a_heading_in_the_design_docs() -> None:
    headings = _section_headings()
    cited = _cited_sections()
    assert cited, "no § citation found: the scan is broken"
    dangling = {number: places[:3] for number, places in cited.items() if number not in headings}
    assert not dangling, (
        "§ numbers cited but no heading in docs/design/ carries them "
        f"(keep `## §N Title` headings): {dangling}"
    )


def test_section_numbers_run_without_gaps() -> None:
    """A room may continue a section (§11 replicas, §19 schedules), but no number is skipped:
    §1 to the last are all headings, so a reader following the numbers misses nothing."""
    top = sorted({int(number.split(".")[0]) for number in _section_headings()})
    assert top, "no `## §N Title` heading in docs/design/"
    assert top == list(range(1, top[-1] + 1)), f"section numbers with gaps: {top}"


def test_the_overview_is_short_and_links_every_room() -> None:
    lines = OVERVIEW.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= OVERVIEW_MAX_LINES, (
        f"docs/design/README.md has {len(lines)} lines; at most {OVERVIEW_MAX_LINES}"
    )
    text = "\n".join(lines)
    rooms = [path.name for path in _design_files() if path != OVERVIEW]
    unlinked = [name for name in rooms if f"]({name})" not in text]
    assert not unlinked, f"rooms the overview does not link: {unlinked}"


def test_the_old_design_path_points_at_the_rooms() -> None:
    """Code and units still cite ``docs/design.md §N``: the stub sends readers on."""
    stub = (REPO / "docs" / "design.md").read_text(encoding="utf-8")
    assert "design/README.md" in stub
    assert len(stub.splitlines()) <= 60


def test_the_readme_is_short_and_starts_with_the_two_commands() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    lines = readme.splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; at most 220"
    assert tuple(_code_blocks(readme)[:2]) == QUICK_START
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert f"exec {QUICK_START[1]}" in ci, ".ci/run must run the README's test command"
    for target in ("docs/operations.md", "docs/design/", "docs/benchmarks.md"):
        assert f"]({target}" in readme, f"README does not link {target}"


def _markdown_files() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def test_relative_links_reach_a_file_and_a_heading() -> None:
    broken: list[str] = []
    for path in _markdown_files():
        for line in _outside_fences(path.read_text(encoding="utf-8")):
            for match in LINK.finditer(line):
                target = match.group(1) or match.group(2)
                if re.match(r"[a-z]+:", target):
                    continue
                file_part, _, anchor = target.partition("#")
                resolved = (path.parent / file_part).resolve() if file_part else path
                if resolved.is_dir():
                    resolved = resolved / "README.md"
                where = f"{path.relative_to(REPO).as_posix()}: {target}"
                if not resolved.exists():
                    broken.append(where + " (no such file)")
                elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
                    broken.append(where + " (no such heading)")
    assert not broken, f"broken links: {broken}"
