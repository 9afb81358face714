"""The Feishu channel's lifecycle: refused credentials park it (the daemon keeps serving),
dropped sockets reconnect, stops leave nothing behind, reloads keep exactly one connection,
``probe`` for ``check --online``."""

from __future__ import annotations

import functools
import threading
from pathlib import Path

import pytest
import yaml

from bot.config.loader import load_settings
from bot.errors import AuthFailed
from tests.bot.harness import registry_daemon
from tests.channels.feishu_support import (
    DM,
    build_channel,
    feishu_daemon,
    feishu_settings,
    wait_text,
)
from tests.channels.health_log import HealthLog
from tests.channels.parking_support import parks_while_another_serves
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import FakeChannel
from tests.fakes.feishu_api import FakeFeishu


def one_live_of(fake: FakeFeishu, opened: int) -> bool:
    return fake.connections() == opened and fake.live_connections() == 1


def sdk_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "feishu-ws" and t.is_alive()]


async def test_refused_credentials_park_feishu_while_the_daemon_serves(tmp_path: Path) -> None:
    with FakeFeishu() as fake:
        fake.refuse_credentials = True
        other = FakeChannel()
        settings = feishu_settings(tmp_path, fake)
        async with feishu_daemon(settings, fake, FakeAgent(), others=[other],
                                 wait_connected=False) as run:  # fmt: skip
            await parks_while_another_serves(run.kernel, "feishu", other)
        assert fake.connections() == 0
        assert sdk_threads() == []


async def test_credentials_refused_while_reconnecting_are_reported(tmp_path: Path) -> None:
    with FakeFeishu() as fake:
        settings = feishu_settings(tmp_path, fake)
        async with feishu_daemon(settings, fake, FakeAgent()) as run:
            fake.refuse_credentials = True
            await fake.await_until(lambda: fake.live_connections() == 1)
            fake.drop_socket()
            await run.health.wait_for("auth_failed")
        assert sdk_threads() == []


async def test_a_dropped_socket_reconnects_and_keeps_answering(tmp_path: Path) -> None:
    with FakeFeishu() as fake:
        settings = feishu_settings(tmp_path, fake)
        async with feishu_daemon(settings, fake, FakeAgent()) as run:
            await fake.await_connected(1)
            fake.drop_socket()
            await run.health.wait_for("disconnected")
            await run.health.wait_for("connected", count=2)
            fake.push_message("after the drop", chat_id=DM)
            await wait_text(fake, DM, "echo: after the drop")
            await run.settle()
        assert fake.connections() == 2
        assert run.health.activity_count > 0


async def test_stop_leaves_no_thread_and_no_socket(tmp_path: Path) -> None:
    with FakeFeishu() as fake:
        settings = feishu_settings(tmp_path, fake)
        async with feishu_daemon(settings, fake, FakeAgent()):
            await fake.await_connected(1)
            assert len(sdk_threads()) == 1
        assert sdk_threads() == []
        await fake.await_until(lambda: fake.live_connections() == 0)


async def test_two_reloads_in_a_row_keep_one_connection(tmp_path: Path) -> None:
    with FakeFeishu() as fake:
        path = tmp_path / "switchboard.yaml"
        config = feishu_settings(tmp_path, fake).model_dump(mode="json")
        config["channels"] = {"feishu": config["channels"]["feishu"]}
        config["channels"]["feishu"]["app_secret"] = fake.app_secret
        config["channels"]["feishu"]["verification_token"] = fake.verification_token
        config["channels"]["feishu"]["encrypt_key"] = fake.encrypt_key
        path.write_text(yaml.safe_dump(config))
        settings = load_settings(path, {})
        async with registry_daemon(settings, FakeAgent(), config_path=path) as daemon:
            await fake.await_connected(1)
            assert daemon.reloader is not None
            for count, user in ((2, "ou_a"), (3, "ou_b")):
                config["channels"]["feishu"]["allowed_users"] = [user]
                path.write_text(yaml.safe_dump(config))
                await daemon.reloader.reload("test")
                await fake.await_until(functools.partial(one_live_of, fake, count), timeout=15)
            assert len(sdk_threads()) == 1
            fake.push_message("still one", chat_id=DM)
            await wait_text(fake, DM, "echo: still one")
        assert sdk_threads() == []
        await fake.await_until(lambda: fake.live_connections() == 0)


async def test_probe_reports_the_bot_and_refused_credentials(tmp_path: Path) -> None:
    with FakeFeishu() as fake:
        channel = build_channel(feishu_settings(tmp_path, fake), HealthLog())
        detail = await channel.probe()
        assert fake.bot_open_id in detail
        assert fake.bot_name in detail
        fake.refuse_credentials = True
        with pytest.raises(AuthFailed):
            await build_channel(feishu_settings(tmp_path, fake), HealthLog()).probe()
        assert [c.name for c in fake.calls()] == [
            "auth.tenant_access_token", "bot.info", "auth.tenant_access_token",
        ]  # fmt: skip
