"""Prometheus's own checker on the shipped rules and scrape config, and the rules' unit tests
(``switchboard.rules.test.yml``: every alert fires when it should and stays quiet otherwise)."""

from __future__ import annotations

import subprocess

import pytest

from tests.deploy.support import (
    EXAMPLE_CONFIG,
    NOT_INSTALLED,
    PROMETHEUS_DIR,
    PROMTOOL,
    RULES,
    RULES_TESTS,
)

pytestmark = pytest.mark.skipif(PROMTOOL is None, reason=NOT_INSTALLED.format("promtool"))


def _promtool(*args: str) -> str:
    assert PROMTOOL is not None
    done = subprocess.run(  # noqa: S603 - our own files, promtool from PATH
        [PROMTOOL, *args],
        cwd=PROMETHEUS_DIR,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    return output


def test_the_rules_pass_promtool_check() -> None:
    output = _promtool("check", "rules", str(RULES))
    assert "SUCCESS" in output


def test_the_example_scrape_config_and_its_rule_file_pass_promtool_check() -> None:
    output = _promtool("check", "config", str(EXAMPLE_CONFIG))
    assert "1 rule files found" in output


def test_the_rules_unit_tests_pass() -> None:
    output = _promtool("test", "rules", str(RULES_TESTS))
    assert "SUCCESS" in output
