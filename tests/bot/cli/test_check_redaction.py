"""``switchboard check`` shows where the model is, never the credentials in its
URL."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from bot.cli import main

SECRET = "url-password-5150"  # noqa: S105 - a test value


def _check(tmp_path: Path, *extra: str) -> str:
    config = tmp_path / "switchboard.yaml"
    config.write_text(
        "config_version: 1\n"
        f"state_dir: {tmp_path / 'state'}\n"
        "agent:\n"
        "  model:\n"
        f"    base_url: 'https://proxy:{SECRET}@llm.example.com/v1?api_key={SECRET}x'\n"
        "    api_key: sk-test-key-1234\n"
    )
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["check", "-c", str(config), *extra]) == 0
    return out.getvalue()


def test_check_redacts_the_model_url(tmp_path: Path) -> None:
    shown = _check(tmp_path)
    assert SECRET not in shown
    assert "https://proxy:***@llm.example.com/v1?api_key=***" in shown


def test_check_json_redacts_the_model_url(tmp_path: Path) -> None:
    summary = json.loads(_check(tmp_path, "--json"))
    assert SECRET not in json.dumps(summary)
