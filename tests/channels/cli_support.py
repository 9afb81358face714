"""Running ``python -m bot`` as an operator would, for the end-to-end tests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO

REPO = Path(__file__).resolve().parents[2]


def cli_env(state_dir: Path) -> dict[str, str]:
    """This environment without model keys, Switchboard settings or proxies."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SWITCHBOARD_"))}
    env = {k: v for k, v in env.items() if not k.lower().endswith("_proxy")}
    env.update({"SWITCHBOARD_STATE_DIR": str(state_dir), "NO_PROXY": "127.0.0.1,localhost"})
    return env


def cli_config(tmp_path: Path, agent: str, channels: str) -> Path:
    """``tmp_path/switchboard.yaml``: state in ``$SWITCHBOARD_STATE_DIR``, ``agent``, no HTTP
    server, a 5 s shutdown grace, open DMs, and ``channels`` (the lines under ``channels:``)."""
    config = tmp_path / "switchboard.yaml"
    config.write_text(
        "config_version: 1\n"
        "state_dir: ${SWITCHBOARD_STATE_DIR}\n"
        f"agent: {agent}\n"
        "http: {enabled: false}\n"
        "daemon: {shutdown_grace_s: 5}\n"
        "access: {dm_policy: open}\n"
        "channels:\n"
        f"{channels}"
    )
    return config


def check_online(config: Path, state_dir: Path) -> subprocess.CompletedProcess[str]:
    """``switchboard check --online -c CONFIG``."""
    return subprocess.run(  # noqa: S603 - our own CLI
        [sys.executable, "-m", "bot", "check", "-c", str(config), "--online"],
        capture_output=True, text=True, env=cli_env(state_dir), cwd=REPO, timeout=60,
        check=False,
    )  # fmt: skip


def start_run(config: Path, log: IO[str], env: Mapping[str, str]) -> subprocess.Popen[str]:
    """``switchboard run -c CONFIG`` in the background, its output and errors in ``log``."""
    return subprocess.Popen(  # noqa: S603 - our own CLI
        [sys.executable, "-m", "bot", "run", "-c", str(config)],
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, text=True,
        env=dict(env), cwd=REPO,
    )  # fmt: skip


@contextmanager
def daemon_process(config: Path, state_dir: Path) -> Iterator[subprocess.Popen[str]]:
    """``switchboard run -c CONFIG`` with its output piped; killed on the way out if it still
    runs."""
    process = subprocess.Popen(  # noqa: S603 - our own CLI
        [sys.executable, "-m", "bot", "run", "-c", str(config)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(state_dir), cwd=REPO,
    )  # fmt: skip
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=10)
