"""``switchboard run`` on an HTTP port another process holds: one line naming the address and
exit status 75 (design §13), never a traceback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def test_a_taken_port_is_one_line_and_exit_75(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        config = tmp_path / "run.yaml"
        config.write_text(
            f"config_version: 1\nstate_dir: {tmp_path / 'state'}\n"
            f"agent: {{backend: echo}}\nhttp: {{host: 127.0.0.1, port: {port}}}\n"
            "channels:\n  console: {enabled: false}\n"
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SWITCHBOARD_"))}
        result = subprocess.run(  # noqa: S603 - our own CLI
            [sys.executable, "-m", "bot", "run", "-c", str(config)],
            capture_output=True, text=True, env=env, cwd=REPO, timeout=60, check=False,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    assert result.returncode == 75, result.stderr
    assert f"http: cannot listen on 127.0.0.1:{port}: address already in use" in result.stderr
    assert "Traceback" not in result.stderr
