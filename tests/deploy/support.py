"""What the tests of ``deploy/`` share: the files, the PromQL they hold, and the metric names a
running daemon exposes."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

REPO = Path(__file__).resolve().parents[2]
PROMETHEUS_DIR = REPO / "deploy" / "prometheus"
RULES = PROMETHEUS_DIR / "switchboard.rules.yml"
RULES_TESTS = PROMETHEUS_DIR / "switchboard.rules.test.yml"
EXAMPLE_CONFIG = PROMETHEUS_DIR / "prometheus.example.yml"
DASHBOARD = REPO / "deploy" / "grafana" / "switchboard.json"
OPERATIONS = REPO / "docs" / "operations.md"

PROMTOOL = shutil.which("promtool")
PROMETHEUS = shutil.which("prometheus")
NOT_INSTALLED = "{} not installed (apt-get install -y prometheus; scripts/test does as root)"

METRIC = re.compile(r"\bswitchboard_[a-z0-9_]+\b")
RECORDED = re.compile(r"\bswitchboard:[a-z0-9_:]+")
LABEL_VALUES = re.compile(r"^label_values\((.+),\s*\w+\)$")
GRAFANA_VARIABLES = {
    "$__rate_interval": "1m",
    "$__range": "1h",
    "$instance": ".*",
    "$channel": ".*",
}
"""What Grafana puts in place of the dashboard's variables, for running its queries."""


def rule_groups() -> list[dict[str, Any]]:
    groups: list[dict[str, Any]] = yaml.safe_load(RULES.read_text(encoding="utf-8"))["groups"]
    return groups


def rules() -> Iterator[dict[str, Any]]:
    for group in rule_groups():
        yield from group["rules"]


def alerts() -> list[dict[str, Any]]:
    return [rule for rule in rules() if "alert" in rule]


def rule_texts() -> Iterator[str]:
    """Every expression of the rules, and the annotations (their templates query too)."""
    for rule in rules():
        yield rule["expr"]
        yield from rule.get("annotations", {}).values()


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return loaded


def _panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for panel in panels:
        yield panel
        yield from _panels(panel.get("panels", []))


def dashboard_panels() -> list[dict[str, Any]]:
    return list(_panels(dashboard()["panels"]))


def dashboard_exprs() -> list[str]:
    """Each panel query, and each variable's query as a PromQL selector."""
    exprs = [
        target["expr"]
        for panel in dashboard_panels()
        for target in panel.get("targets", [])
        if "expr" in target
    ]
    for variable in dashboard()["templating"]["list"]:
        if variable["type"] == "query":
            match = LABEL_VALUES.match(variable["definition"])
            assert match, f"variable {variable['name']}: not a label_values() query"
            exprs.append(match.group(1))
    return exprs


def runnable(expr: str) -> str:
    """A dashboard query with Grafana's variables filled in."""
    for name, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(name, value)
    assert "$" not in expr, f"a variable the tests do not fill in: {expr}"
    return expr


def exposed_names(metrics_text: str) -> set[str]:
    """The series names the daemon's ``/metrics`` page declares, samples or not yet (a
    labelled counter has none until first counted): what Prometheus can store of it."""
    suffixes = {
        "counter": ("_total", "_created"),
        "histogram": ("_bucket", "_count", "_sum", "_created"),
        "summary": ("", "_count", "_sum", "_created"),
    }
    names: set[str] = set()
    for family in text_string_to_metric_families(metrics_text):
        names.update(family.name + suffix for suffix in suffixes.get(family.type, ("",)))
        names.update(sample.name for sample in family.samples)
    return names


def headings(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings, as GitHub makes them."""
    anchors: set[str] = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if match := re.match(r"^#{1,6}\s+(.*?)\s*$", line):
            text = re.sub(r"[^\w\- ]", "", match.group(1).replace("`", "").lower())
            anchors.add(text.replace(" ", "-"))
    return anchors
