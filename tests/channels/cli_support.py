"""Running ``python -m bot`` as an operator would, for the end-to-end tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def cli_env(state_dir: Path) -> dict[str, str]:
    """This environment without model keys, Switchboard settings or proxies."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SWITCHBOARD_"))}
    env = {k: v for k, v in env.items() if not k.lower().endswith("_proxy")}
    env.update({"SWITCHBOARD_STATE_DIR": str(state_dir), "NO_PROXY": "127.0.0.1,localhost"})
    return env


def check_online(config: Path, state_dir: Path) -> subprocess.CompletedProcess[str]:
    """``switchboard check --online -c CONFIG``."""
    return subprocess.run(  # noqa: S603 - our own CLI
        [sys.executable, "-m", "bot", "check", "-c", str(config), "--online"],
        capture_output=True, text=True, env=cli_env(state_dir), cwd=REPO, timeout=60,
        check=False,
    )  # fmt: skip
