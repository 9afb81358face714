"""SIGHUP / ``/reload``: validation first, live settings, one channel restarted (design §13)."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import yaml

from bot.app import Daemon
from bot.config.loader import load_settings
from tests.bot.harness import registry_daemon
from tests.fakes.agent import FakeAgent
from tests.fakes.slack_api import FakeSlack
from tests.fakes.telegram_api import FakeTelegram


def _config(
    tmp_path: Path, telegram: FakeTelegram, slack: FakeSlack, *, telegram_extra: Any = None
) -> dict[str, Any]:
    return {
        "config_version": 1,
        "state_dir": str(tmp_path / "state"),
        "http": {"port": 0},
        "access": {"dm_policy": "open", "admins": ["telegram:1"]},
        "channels": {
            "telegram": {
                "enabled": True,
                "token": telegram.token,
                "api_base_url": telegram.api_origin,
                **(telegram_extra or {}),
            },
            "slack": {
                "enabled": True,
                "bot_token": slack.bot_token,
                "app_token": slack.app_token,
                "api_base_url": slack.api_base_url,
            },
        },
    }


def _daemon(path: Path) -> AbstractAsyncContextManager[Daemon]:
    return registry_daemon(load_settings(path, {}), FakeAgent(), config_path=path)


async def _reload(daemon: Daemon) -> str:
    assert daemon.reloader is not None
    return await daemon.reloader.reload("test")


async def test_invalid_config_is_rejected_and_the_running_one_stays(tmp_path: Path) -> None:
    path = tmp_path / "switchboard.yaml"
    with FakeTelegram() as telegram, FakeSlack() as slack:
        path.write_text(yaml.safe_dump(_config(tmp_path, telegram, slack)))
        async with _daemon(path) as daemon:
            before = daemon.settings
            path.write_text("config_version: 1\nagent: {max_concurrent_runs: zero}\n")
            reply = await _reload(daemon)
            assert daemon.settings is before
    assert reply.startswith("Reload rejected; the running configuration stays.")
    assert "agent.max_concurrent_runs" in reply


async def test_changed_channel_block_restarts_only_that_channel(tmp_path: Path) -> None:
    path = tmp_path / "switchboard.yaml"
    with FakeTelegram() as telegram, FakeSlack() as slack:
        path.write_text(yaml.safe_dump(_config(tmp_path, telegram, slack)))
        async with _daemon(path) as daemon:
            assert daemon.kernel is not None
            hub = daemon.kernel.hub
            slack_before, telegram_before = hub.get("slack"), hub.get("telegram")
            changed = _config(tmp_path, telegram, slack, telegram_extra={"allowed_users": ["7"]})
            path.write_text(yaml.safe_dump(changed))
            reply = await _reload(daemon)
            await telegram.await_calls("getMe", 2, timeout=10)
            assert hub.get("slack") is slack_before
            assert hub.get("telegram") is not telegram_before
            assert slack.connections() == 1
            assert daemon.settings.channels.telegram.allowed_users == ("7",)
    assert "Applied: channel telegram restarting with its new settings" in reply
    assert "slack" not in reply


async def test_a_changed_store_block_is_reported_as_needing_a_restart(tmp_path: Path) -> None:
    """The store is opened once at start: a reload cannot move the daemon to another one."""
    path = tmp_path / "switchboard.yaml"
    with FakeTelegram() as telegram, FakeSlack() as slack:
        path.write_text(yaml.safe_dump(_config(tmp_path, telegram, slack)))
        async with _daemon(path) as daemon:
            changed = {**_config(tmp_path, telegram, slack), "store": {"pool_size": 9}}
            path.write_text(yaml.safe_dump(changed))
            reply = await _reload(daemon)
            assert daemon.settings.store.pool_size == 9
    assert "Needs a restart to apply: store" in reply
