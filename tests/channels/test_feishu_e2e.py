"""``switchboard`` as a user runs it with Feishu enabled against FakeFeishu: ``check --online``
probes the app credentials and bot info, and ``run`` answers over the long connection and
drains on SIGTERM. The fake runs on its own thread in this process; the daemon is a child."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.channels.feishu_support import DM, wait_text
from tests.fakes.feishu_api import FakeFeishu

REPO = Path(__file__).resolve().parents[2]


def _env(state_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SWITCHBOARD_"))}
    env = {k: v for k, v in env.items() if not k.lower().endswith("_proxy")}
    env.update({"SWITCHBOARD_STATE_DIR": str(state_dir), "NO_PROXY": "127.0.0.1,localhost"})
    return env


def _config(tmp_path: Path, fake: FakeFeishu) -> Path:
    config = tmp_path / "switchboard.yaml"
    config.write_text(
        "config_version: 1\n"
        "state_dir: ${SWITCHBOARD_STATE_DIR}\n"
        "agent: {backend: echo}\n"
        "http: {enabled: false}\n"
        "daemon: {shutdown_grace_s: 5}\n"
        "access: {dm_policy: open}\n"
        "channels:\n"
        "  feishu:\n"
        "    enabled: true\n"
        f"    app_id: {fake.app_id}\n"
        f"    app_secret: {fake.app_secret}\n"
        f"    domain: {fake.origin}\n"
    )
    return config


def _check(config: Path, state_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - our own CLI
        [sys.executable, "-m", "bot", "check", "-c", str(config), "--online"],
        capture_output=True, text=True, env=_env(state_dir), cwd=REPO, timeout=60, check=False,
    )  # fmt: skip


def test_check_online_probes_feishu(tmp_path: Path) -> None:
    with FakeFeishu() as fake:
        config = _config(tmp_path, fake)
        good = _check(config, tmp_path / "state")
        fake.refuse_credentials = True
        bad = _check(config, tmp_path / "state")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "channel feishu  ok" in good.stdout
    assert fake.bot_open_id in good.stdout
    assert bad.returncode == 1
    assert "channel feishu  FAIL" in bad.stdout
    assert "10014" in bad.stdout
    assert fake.app_secret not in good.stdout + good.stderr + bad.stdout + bad.stderr


@contextmanager
def _daemon(config: Path, state_dir: Path) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(  # noqa: S603 - our own CLI
        [sys.executable, "-m", "bot", "run", "-c", str(config)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(state_dir), cwd=REPO,
    )  # fmt: skip
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=10)


async def test_run_answers_over_the_long_connection_and_drains(tmp_path: Path) -> None:
    with FakeFeishu() as fake:
        config = _config(tmp_path, fake)
        with _daemon(config, tmp_path / "state") as process:
            fake.push_message("hello from feishu", chat_id=DM)
            await wait_text(fake, DM, "hello from feishu", within=45)
            process.send_signal(signal.SIGTERM)
            _, err = await asyncio.to_thread(process.communicate, timeout=30)
        assert process.returncode == 0, err
        assert "channel feishu: starting -> running" in err
        assert "hello from feishu" not in err  # message text is never logged at INFO
        assert "ticket=" not in err
        await fake.await_until(lambda: fake.live_connections() == 0)
