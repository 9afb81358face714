"""``switchboard init`` and ``init --channel NAME``: what they write loads and passes ``check``."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bot.cli.init import PLATFORMS, env_path, init_channel, init_example, template_text
from bot.config.loader import load_settings
from bot.errors import ConfigError

REPO = Path(__file__).resolve().parents[3]
SECRETS = {
    "TELEGRAM_BOT_TOKEN": "123456789:AAE-test-token-for-the-init-test",
    "SLACK_BOT_TOKEN": "xoxb-0000-init-test-bot-token",
    "SLACK_APP_TOKEN": "xapp-1-init-test-app-token",
    "FEISHU_APP_ID": "cli_inittest0001",
    "FEISHU_APP_SECRET": "init-test-app-secret-0001",
    "DINGTALK_CLIENT_ID": "dinginittest0001",
    "DINGTALK_CLIENT_SECRET": "init-test-client-secret-0001",
}


def _switchboard(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SWITCHBOARD_"))}
    clean.update(env)
    return subprocess.run(  # noqa: S603 - our own CLI
        [sys.executable, "-m", "bot", *args],
        capture_output=True, text=True, env=clean, cwd=cwd, timeout=60, check=False,
    )  # fmt: skip


def _values(channel: str) -> dict[str, str]:
    return {name: SECRETS[name] for name in PLATFORMS[channel].env}


def test_plain_init_creates_missing_folders(tmp_path: Path) -> None:
    result = _switchboard("init", "new-dir/deeper/switchboard.yaml", cwd=tmp_path, env={})
    assert result.returncode == 0, result.stderr
    written = tmp_path / "new-dir" / "deeper" / "switchboard.yaml"
    assert written.read_text() == (REPO / "config" / "switchboard.example.yaml").read_text()


def test_plain_init_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    target = tmp_path / "switchboard.yaml"
    target.write_text("mine\n")
    assert init_example(target, force=False) == 78
    assert target.read_text() == "mine\n"
    assert init_example(target, force=True) == 0
    assert target.read_text().startswith("# Switchboard configuration")


@pytest.mark.parametrize("channel", sorted(PLATFORMS))
def test_a_channel_config_loads_once_its_variables_are_set(tmp_path: Path, channel: str) -> None:
    config = tmp_path / "etc" / "switchboard.yaml"
    assert init_channel(config, channel, force=False) == 0
    settings = load_settings(config, {**_values(channel), "SWITCHBOARD_STATE_DIR": "/srv/sb"})
    assert sorted(settings.channels.enabled()) == [channel]
    assert settings.state_dir == Path("/srv/sb")
    assert settings.agent.model.offline
    with pytest.raises(ConfigError) as refused:
        load_settings(config, {})
    for name in PLATFORMS[channel].env:  # every variable the block reads is named
        assert f"environment variable {name} is not set" in str(refused.value)


@pytest.mark.parametrize("channel", sorted(PLATFORMS))
def test_a_channel_init_passes_check(tmp_path: Path, channel: str) -> None:
    config = tmp_path / "conf" / "switchboard.yaml"
    result = _switchboard("init", "--channel", channel, str(config), cwd=tmp_path, env={})
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert f"docs/platforms/{channel}.md" in out
    assert f"switchboard check --online -c {config}" in out
    assert f"switchboard run -c {config}" in out
    env = {**_values(channel), "SWITCHBOARD_STATE_DIR": str(tmp_path / "state")}
    check = _switchboard("check", "-c", str(config), cwd=tmp_path, env=env)
    assert check.returncode == 0, check.stdout + check.stderr
    assert f"channels   {channel}" in check.stdout


@pytest.mark.parametrize("channel", sorted(PLATFORMS))
def test_the_env_file_is_private_and_names_every_variable(tmp_path: Path, channel: str) -> None:
    config = tmp_path / "switchboard.yaml"
    init_channel(config, channel, force=False)
    env = env_path(config)
    assert env == tmp_path / "switchboard.env"
    assert stat.S_IMODE(env.stat().st_mode) == 0o600
    assigned = [line.partition("=") for line in env.read_text().splitlines() if "=" in line]
    assigned = [parts for parts in assigned if not parts[0].startswith("#")]
    names = [name for name, _, _ in assigned]
    assert all(value == "" for _, _, value in assigned)
    assert names[: len(PLATFORMS[channel].env)] == list(PLATFORMS[channel].env)
    for name in names:
        assert f"${{{name}" in config.read_text()


def test_slack_gets_the_manifest_and_feishu_the_permissions(tmp_path: Path) -> None:
    init_channel(tmp_path / "slack" / "switchboard.yaml", "slack", force=False)
    init_channel(tmp_path / "feishu" / "switchboard.yaml", "feishu", force=False)
    manifest = (tmp_path / "slack" / "slack-manifest.yaml").read_text()
    assert manifest == template_text("slack-manifest.yaml")
    assert yaml.safe_load(manifest)["settings"]["socket_mode_enabled"] is True
    permissions = (tmp_path / "feishu" / "feishu-permissions.json").read_text()
    assert permissions == template_text("feishu-permissions.json")
    assert not (tmp_path / "slack" / "feishu-permissions.json").exists()


def test_overwrite_is_refused_without_force_and_the_env_file_is_kept(tmp_path: Path) -> None:
    config = tmp_path / "switchboard.yaml"
    assert init_channel(config, "slack", force=False) == 0
    env_path(config).write_text("SLACK_BOT_TOKEN=xoxb-kept\n")
    config.write_text("mine\n")
    assert init_channel(config, "slack", force=False) == 78
    assert config.read_text() == "mine\n"
    config.unlink()
    manifest = tmp_path / "slack-manifest.yaml"
    manifest.write_text("edited\n")
    assert init_channel(config, "slack", force=False) == 78  # the manifest is not replaced
    assert not config.exists()
    assert manifest.read_text() == "edited\n"
    assert init_channel(config, "slack", force=True) == 0
    assert manifest.read_text() == template_text("slack-manifest.yaml")
    assert env_path(config).read_text() == "SLACK_BOT_TOKEN=xoxb-kept\n"  # secrets survive --force
