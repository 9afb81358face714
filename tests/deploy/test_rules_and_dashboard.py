"""The shipped rules and dashboard stay true to the daemon: every metric they name is one a
running daemon's ``/metrics`` declares (a renamed metric fails here, not on a silent graph),
every alert carries what an operator needs and a unit test each way, and the runbook links land
on a heading of docs/operations.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.bot.harness import http_get, make_settings, running
from tests.deploy.support import (
    METRIC,
    OPERATIONS,
    RECORDED,
    RULES_TESTS,
    alerts,
    dashboard,
    dashboard_exprs,
    exposed_names,
    headings,
    rule_texts,
    rules,
)
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import FakeChannel

SEVERITIES = {"critical", "warning", "info"}


async def test_every_metric_the_rules_and_the_dashboard_name_is_exposed(tmp_path: Path) -> None:
    async with running(make_settings(tmp_path), [FakeChannel()], FakeAgent()) as daemon:
        status, text = await http_get(daemon.daemon, "/metrics")
    assert status == 200
    exposed = exposed_names(text)
    assert "switchboard_channel_up" in exposed
    assert "switchboard_inbound_messages_total" in exposed  # declared before any is counted
    used = {
        "rules": {name for text in rule_texts() for name in METRIC.findall(text)},
        "dashboard": {name for expr in dashboard_exprs() for name in METRIC.findall(expr)},
    }
    for where, names in used.items():
        assert names, f"no metric found in the {where}"
        missing = sorted(names - exposed)
        assert not missing, f"the {where} use metrics the daemon does not expose: {missing}"


def test_recorded_series_used_are_recorded() -> None:
    recorded = {rule["record"] for rule in rules() if "record" in rule}
    used = {name for text in [*rule_texts(), *dashboard_exprs()] for name in RECORDED.findall(text)}
    assert used - recorded == set()


def test_every_alert_says_how_long_how_bad_what_and_where_to_look() -> None:
    anchors = headings(OPERATIONS)
    assert alerts()
    for alert in alerts():
        name = alert["alert"]
        assert alert.get("for"), f"{name}: no for:"
        assert alert["labels"]["severity"] in SEVERITIES, name
        annotations = alert["annotations"]
        assert annotations["summary"], name
        assert annotations["description"], name
        page, _, anchor = annotations["runbook"].partition("#")
        assert page == "docs/operations.md", name
        assert anchor == name.lower(), f"{name}: runbook anchor {anchor!r}"
        assert anchor in anchors, f"{name}: docs/operations.md has no heading #{anchor}"


def test_every_alert_has_a_unit_test_that_fires_it_and_one_that_does_not() -> None:
    tests: list[dict[str, Any]] = yaml.safe_load(RULES_TESTS.read_text(encoding="utf-8"))["tests"]
    cases = [case for test in tests for case in test.get("alert_rule_test", [])]
    for alert in alerts():
        name = alert["alert"]
        own = [case for case in cases if case["alertname"] == name]
        assert any(case["exp_alerts"] for case in own), f"{name}: never tested firing"
        assert any(not case["exp_alerts"] for case in own), f"{name}: never tested quiet"


def test_the_dashboard_has_its_variables_and_prometheus_panels() -> None:
    board = dashboard()
    assert 36 <= board["schemaVersion"] <= 41
    variables = {variable["name"]: variable for variable in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    assert variables["channel"]["type"] == "query"
    ids = [panel["id"] for panel in board["panels"]]
    assert len(ids) == len(set(ids))
    for panel in board["panels"]:
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == "${datasource}", panel["title"]
