"""Every secret that lets a request in is refused at load when empty or short (design §2): the
webhook secrets of the channels in HTTP mode, the push API token and the console token."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.config.loader import load_settings
from bot.errors import ConfigError

REPO = Path(__file__).resolve().parents[3]
SHORT = "abc"
GOOD = "a-long-enough-secret-1234"


def _load(tmp_path: Path, body: str, environ: dict[str, str] | None = None) -> list[str]:
    path = tmp_path / "switchboard.yaml"
    path.write_text("config_version: 1\n" + body)
    with pytest.raises(ConfigError) as caught:
        load_settings(path, environ or {})
    return str(caught.value).splitlines()[1:]


def test_an_unset_telegram_webhook_secret_is_refused(tmp_path: Path) -> None:
    lines = _load(
        tmp_path,
        "channels:\n  telegram:\n    enabled: true\n    token: '1:x'\n    mode: webhook\n"
        "    webhook:\n      url: https://example.org/tg\n"
        "      secret_token: '${TELEGRAM_WEBHOOK_SECRET:-}'\n",
    )
    assert lines == [
        "channels.telegram.webhook.secret_token: must be at least 16 characters "
        "(environment variable TELEGRAM_WEBHOOK_SECRET is not set)"
    ]


def test_short_secrets_are_refused_each_by_its_key(tmp_path: Path) -> None:
    lines = _load(
        tmp_path,
        f"http:\n  push_api: {{enabled: true, token: {SHORT}}}\n"
        f"console: {{enabled: true, token: {SHORT}}}\n"
        "channels:\n"
        f"  slack: {{enabled: true, mode: http, bot_token: xoxb-1, signing_secret: {SHORT}}}\n"
        "  feishu: {enabled: true, mode: webhook, app_id: a, app_secret: b,"
        f" verification_token: {SHORT}, encrypt_key: {SHORT}}}\n",
    )
    assert sorted(lines) == sorted(
        f"{key}: must be at least 16 characters"
        for key in (
            "http.push_api.token",
            "console.token",
            "channels.slack.signing_secret",
            "channels.feishu.verification_token",
            "channels.feishu.encrypt_key",
        )
    )


def test_long_secrets_pass_and_unused_ones_are_not_checked(tmp_path: Path) -> None:
    path = tmp_path / "switchboard.yaml"
    path.write_text(
        "config_version: 1\n"
        f"http:\n  push_api: {{enabled: true, token: {GOOD}}}\n"
        f"console: {{enabled: true, token: {GOOD}}}\n"
        "channels:\n"
        f"  slack: {{enabled: true, mode: http, bot_token: xoxb-1, signing_secret: {GOOD}}}\n"
        "  feishu: {enabled: true, mode: webhook, app_id: a, app_secret: b,"
        f" verification_token: {GOOD}, encrypt_key: ''}}\n"
        f"  dingtalk: {{enabled: false, client_id: a, client_secret: {SHORT}}}\n"
    )
    settings = load_settings(path, {})
    assert settings.console.token_text == GOOD


def test_check_refuses_an_unset_webhook_secret_with_exit_78(tmp_path: Path) -> None:
    config = tmp_path / "switchboard.yaml"
    config.write_text(
        f"config_version: 1\nstate_dir: {tmp_path / 'state'}\n"
        "channels:\n  telegram:\n    enabled: true\n    token: '1:x'\n    mode: webhook\n"
        "    webhook: {url: 'https://example.org/tg',"
        " secret_token: '${TELEGRAM_WEBHOOK_SECRET:-}'}\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TELEGRAM_", "SWITCHBOARD_"))}
    result = subprocess.run(  # noqa: S603 - our own CLI
        [sys.executable, "-m", "bot", "check", "-c", str(config)],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 78, result.stderr
    assert "channels.telegram.webhook.secret_token: must be at least 16 characters" in (
        result.stderr
    )
