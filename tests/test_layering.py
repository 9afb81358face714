"""The import graph keeps the layout's promises (docs/design.md §1).

Read from the source with ``ast`` (nothing is imported), counting imports under
``if TYPE_CHECKING:`` too: a cycle that exists only for type hints is still a cycle a reader
has to untangle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("bot", "channels", "agent", "store")
EDGES = ("channels", "agent", "store")

EDGE_MAY_IMPORT = (
    "bot.ports",
    "bot.messages",
    "bot.errors",
    "bot.records",
    "bot.config.settings",
    "bot.config.store",
    "bot.delivery.chunking",
    "bot.delivery.bounded",
    "bot.delivery.files",
    "bot.workspace",
    "bot.lifecycle",
    "bot.backoff",
    "bot.text",
)
"""What the kernel offers the edges: the ports and the values crossing them, the settings they
are built from, and the few helpers written for adapters and backends."""

KERNEL_LAYERS = {"delivery": 2, "pipeline": 4, "commands": 4, "operator": 4, "ops": 6}
KERNEL_LAYERS |= {"app": 8, "kernel": 8, "cli": 10, "console": 10, "__main__": 12}
"""Inside ``bot/`` imports run one way: ops → pipeline → delivery → the root types. Commands sit
beside the pipeline (the router runs them; they act on lanes and sessions), and so do the
operator's actions and views (``operator``), which the chat commands call too. The composition
root (``app``, ``kernel``) wires all of those, and the command line starts it. The browser
console is an operator surface beside the command line; what the two share lives in
``operator``, never in one of them; ``switchboard run`` hands the console to the daemon as an
HTTP mount."""
ROOMS = {"push": 5, "schedules": 5, "takeover": 5, "fleet": 5, "approvals": 5, "usage": 5}
"""The features' rooms (design §1): each feature's kernel code in one package, above the pipeline
it plugs a step into and below the composition root that assembles it. A room never imports
another room."""
CONTRACTS = {
    "bot.fleet.fence": "delivery checks the fence before it acts for a chat",
    "bot.takeover.config": "the settings schema is composed of the rooms' sections",
    "bot.push.config": "the settings schema is composed of the rooms' sections",
    "bot.approvals.config": "the settings schema is composed of the rooms' sections",
    "bot.usage.config": "the settings schema is composed of the rooms' sections",
}
"""A room's modules the layers below may import, and why: leaves that import only the root
types, the ports and the settings."""
FEATURE_WORDS = {
    "push": ("push", "proactive"),
    "schedules": ("schedule",),
    "takeover": ("takeover", "mute", "handoff"),
    "fleet": ("replica", "rebalance", "ownership", "fence", "lease", "shared_storage"),
    "revisions": ("revision", "revised"),
    "listen": ("listen", "group_context"),
    "approvals": ("approval",),
    "usage": ("usage", "budgets"),
}
"""How a feature's modules are named, to find them wherever they are (``budgets``, not
``budget``: delivery's send budget, ``bot/delivery/budget.py``, is another thing)."""
MAX_FEATURE_FOLDERS = 2
LAYERS = KERNEL_LAYERS | ROOMS
OPERATOR_WRITES = {"access": {"take_pairing", "set_status"}, "outbox": {"revive", "purge"}}
"""The store calls that are an operator's action (``store.access.set_status``…): made in
``bot.operator.actions`` only, so the CLI, the console and the chat commands act alike."""
MAX_TOP_LEVEL_MODULES = 15


@cache
def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            name = ".".join(path.relative_to(REPO).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def _resolve(target: str) -> str | None:
    known = modules()
    while target and target not in known:
        target = target.rpartition(".")[0]
    return target or None


def _targets(module: str, path: Path) -> Iterator[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


@cache
def graph() -> dict[str, frozenset[str]]:
    edges: dict[str, frozenset[str]] = {}
    for module, path in modules().items():
        resolved = {_resolve(target) for target in _targets(module, path)}
        edges[module] = frozenset(t for t in resolved if t is not None and t != module)
    return edges


def _layer(module: str) -> int:
    if module in CONTRACTS:
        return 0
    parts = module.split(".")
    return LAYERS.get(parts[1], 0) if len(parts) > 1 else 0


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    edges = graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_a_module_that_imports_it_back() -> None:
    assert _cycles() == []


def test_the_kernel_never_imports_an_edge() -> None:
    wrong = {
        (module, target)
        for module, targets in graph().items()
        if module.startswith("bot")
        for target in targets
        if target.split(".")[0] in EDGES
    }
    assert wrong == set()


def test_edges_import_only_what_the_kernel_offers_them_and_never_each_other() -> None:
    wrong = set()
    for module, targets in graph().items():
        top = module.split(".")[0]
        if top not in EDGES:
            continue
        for target in targets:
            other = target.split(".")[0]
            if (other == "bot" and not target.startswith(EDGE_MAY_IMPORT)) or (
                other in EDGES and other != top
            ):
                wrong.add((module, target))
    assert wrong == set()


def test_kernel_imports_run_one_way() -> None:
    wrong = {
        (module, target)
        for module, targets in graph().items()
        if module.startswith("bot")
        for target in targets
        if _layer(target) > _layer(module)
    }
    assert wrong == set()


def _room(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "bot" and parts[1] in ROOMS else None


def test_a_room_never_imports_another_room() -> None:
    wrong = {
        (module, target)
        for module, targets in graph().items()
        if _room(module) is not None
        for target in targets
        if _room(target) not in (None, _room(module))
    }
    assert wrong == set()


def test_each_feature_lives_in_at_most_two_folders() -> None:
    """The CLI and the web console aside: they are surfaces over every feature."""
    for feature, words in FEATURE_WORDS.items():
        folders = {
            path.parent.relative_to(REPO).as_posix()
            for module, path in modules().items()
            if module.startswith("bot.")
            and not module.startswith(("bot.cli", "bot.console"))
            and any(word in path.stem for word in words)
        }
        assert len(folders) <= MAX_FEATURE_FOLDERS, (feature, sorted(folders))


def test_the_console_never_imports_the_cli() -> None:
    """Two operator surfaces side by side: what both need lives below both (``bot.operator``)."""
    wrong = {
        (module, target)
        for module, targets in graph().items()
        if module.startswith("bot.console")
        for target in targets
        if target == "bot.cli" or target.startswith("bot.cli.")
    }
    assert wrong == set()


def _store_calls(path: Path) -> Iterator[tuple[str, str]]:
    """``(table, method)`` of every ``<…>.table.method(…)`` call in a file."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        owner = node.func.value
        if isinstance(owner, ast.Attribute):
            yield owner.attr, node.func.attr


def test_operator_actions_are_written_once() -> None:
    wrong = {
        (module, f"{table}.{method}")
        for module, path in modules().items()
        if module.startswith("bot.") and module != "bot.operator.actions"
        for table, method in _store_calls(path)
        if method in OPERATOR_WRITES.get(table, set())
    }
    assert wrong == set()
    calls = set(_store_calls(modules()["bot.operator.actions"]))
    assert calls >= {(t, m) for t, methods in OPERATOR_WRITES.items() for m in methods}


def test_inbound_statuses_are_written_only_by_the_journal() -> None:
    """Every status change of an inbound entry goes through ``bot.pipeline.journal``, whose
    table of transitions keeps a finished entry finished."""
    inbound = {"inbound", "_inbound"}
    wrong = {
        module
        for module, path in modules().items()
        if module.startswith("bot.") and module != "bot.pipeline.journal"
        for table, method in _store_calls(path)
        if table in inbound and method == "update"
    }
    assert wrong == set()
    journal = set(_store_calls(modules()["bot.pipeline.journal"]))
    assert ("_inbound", "update") in journal


def test_the_kernel_top_level_stays_small() -> None:
    top_level = sorted(path.name for path in (REPO / "bot").glob("*.py"))
    assert len(top_level) <= MAX_TOP_LEVEL_MODULES, top_level


def test_the_checks_see_the_graph() -> None:
    """Guards the guard: a parsing slip would make every check above pass vacuously."""
    edges = graph()
    assert "bot.pipeline.router" in edges["bot.kernel"]
    assert "bot.ports" in edges["channels.telegram.adapter"]
    assert _layer("bot.ops.http") > _layer("bot.pipeline.router") > _layer("bot.delivery.outbox")
