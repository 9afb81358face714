"""``switchboard run`` and ``switchboard check --online`` as a user runs them, against the fake
Telegram and the fake model server: kill -9 during a turn still gives exactly one answer
(design §11, §13, §15)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO

from tests.channels.cli_support import start_run
from tests.channels.telegram_support import texts, wait_text
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.fakes.telegram_api import FakeTelegram

REPO = Path(__file__).resolve().parents[2]


def _config(tmp_path: Path, fake: FakeTelegram, model: FakeOpenAIServer, token: str) -> Path:
    path = tmp_path / "switchboard.yaml"
    path.write_text(
        "config_version: 1\n"
        f"state_dir: '{tmp_path / 'state'}'\n"
        "http: {enabled: false}\n"
        "access: {dm_policy: open}\n"
        f"agent:\n  model: {{base_url: '{model.base_url}', api_key: sk-test}}\n"
        "daemon: {shutdown_grace_s: 5}\n"
        "channels:\n"
        f"  telegram: {{enabled: true, token: '{token}', api_base_url: '{fake.api_origin}'}}\n"
    )
    return path


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SWITCHBOARD_"))}
    env.update({"NO_PROXY": "127.0.0.1,localhost", "PYTHONUNBUFFERED": "1"})
    for proxy in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        env.pop(proxy, None)
    return env


def _start(config: Path, log: IO[str]) -> subprocess.Popen[str]:
    return start_run(config, log, _env())


async def test_kill_9_during_a_turn_still_answers_exactly_once(tmp_path: Path) -> None:
    with FakeOpenAIServer() as model, FakeTelegram() as fake:
        config = _config(tmp_path, fake, model, fake.token)
        model.script(Reply(text="an answer that never arrives", delay_s=30))
        model.script(Reply(text="the one answer"))
        with (tmp_path / "run1.log").open("w") as log:
            first = _start(config, log)
            try:
                fake.push_message("please answer once")
                await asyncio.to_thread(model.wait_for_requests, 1, 30)
            finally:
                first.send_signal(signal.SIGKILL)
                await asyncio.to_thread(first.wait, 30)
        with (tmp_path / "run2.log").open("w") as log:
            second = _start(config, log)
            try:
                await wait_text(fake, 42, "the one answer", within=30)
            finally:
                second.send_signal(signal.SIGTERM)
                code = await asyncio.to_thread(second.wait, 30)
        shown = texts(fake, 42)
    assert first.returncode == -signal.SIGKILL
    assert code == 0, (tmp_path / "run2.log").read_text()
    assert sum("the one answer" in text for text in shown) == 1, shown
    assert not any("never arrives" in text for text in shown)
    assert not any(text.endswith("▍") for text in shown)  # no placeholder left "thinking"


def _check(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - our own CLI
        [sys.executable, "-m", "bot", "check", "-c", str(config), "--online"],
        capture_output=True, text=True, env=_env(), cwd=REPO, timeout=60, check=False,
    )  # fmt: skip


def test_check_online_probes_telegram_with_getme(tmp_path: Path) -> None:
    with FakeOpenAIServer() as model, FakeTelegram() as fake:
        good = _check(_config(tmp_path, fake, model, fake.token))
        bad = _check(_config(tmp_path, fake, model, "123456:WRONG"))
    assert good.returncode == 0, good.stdout + good.stderr
    assert any("telegram" in line and "ok" in line for line in good.stdout.splitlines())
    assert f"@{fake.bot_username}" in good.stdout
    assert bad.returncode != 0
    reason = [line for line in bad.stdout.splitlines() if "telegram" in line]
    assert reason
    assert any("rejected the bot token" in line for line in reason), bad.stdout
    assert "WRONG" not in bad.stdout + bad.stderr
