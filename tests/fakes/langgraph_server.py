"""A real LangGraph API server (``langgraph dev``, in-memory runtime) as a loopback subprocess.

Not a fake: it is the server the remote backend talks to in production, serving this repo's
``langgraph.json`` graph (or a test config's, ``APPROVALS_CONFIG``: ours and a LangChain
``create_agent`` graph). It runs in a scratch working directory, because the in-memory runtime
keeps its state in ``./.langgraph_api``; ``agent`` and ``tests`` links there make the config's
relative graph paths (``./agent/graph.py``) resolve to this repo. Everything that could leave
the machine is switched off: CLI analytics, the version check, LangSmith tracing, the browser,
proxies.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, Self

REPO_ROOT = Path(__file__).resolve().parents[2]
CONFIG = REPO_ROOT / "langgraph.json"
APPROVALS_CONFIG = Path(__file__).resolve().parent / "langgraph_approvals.json"
"""Our graph as ``agent`` and ``tests/fakes/hitl_graph.py``'s as ``hitl``."""
_LINKED = ("agent", "tests")

_OFFLINE_ENV = {
    "NO_PROXY": "127.0.0.1,localhost",
    "no_proxy": "127.0.0.1,localhost",
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_TRACING": "false",
    "LANGSMITH_TRACING_V2": "false",
    "LANGCHAIN_TRACING_V2": "false",
}
_DROPPED_ENV = ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "LANGGRAPH_API_KEY")


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def offline_env(extra: Mapping[str, str]) -> dict[str, str]:
    """This process's environment without proxies or LangSmith keys, plus ``extra``."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.lower().endswith("_proxy") and key not in _DROPPED_ENV
    }
    env.update(_OFFLINE_ENV)
    env.update(extra)
    return env


class LangGraphDevServer:
    """``with LangGraphDevServer(workdir, env) as server:`` serves ``server.url``."""

    def __init__(
        self,
        workdir: Path,
        env: Mapping[str, str],
        *,
        startup_timeout_s: float = 60.0,
        config: Path = CONFIG,
    ) -> None:
        self._workdir = workdir
        self._config = config
        self._env = offline_env(env)
        self._startup_timeout_s = startup_timeout_s
        self._port = free_port()
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    @property
    def log_path(self) -> Path:
        return self._workdir / "server.log"

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        for name in _LINKED:
            link = self._workdir / name
            if not link.exists():
                link.symlink_to(REPO_ROOT / name, target_is_directory=True)
        command = [
            sys.executable, "-m", "langgraph_cli", "dev",
            "--host", "127.0.0.1", "--port", str(self._port),
            "--config", str(self._config),
            "--no-browser", "--no-reload", "--n-jobs-per-worker", "4",
        ]  # fmt: skip
        self._log = self.log_path.open("wb")
        self._process = subprocess.Popen(  # noqa: S603 - our own interpreter and arguments
            command,
            cwd=self._workdir,
            env=self._env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._wait_ready(self._process)

    def _wait_ready(self, process: subprocess.Popen[bytes]) -> None:
        """Probe ``/ok`` until it answers; fail early (with the log) if the server exits."""
        deadline = time.monotonic() + self._startup_timeout_s
        while time.monotonic() < deadline:
            if self._answers():
                return
            try:
                code = process.wait(timeout=0.1)
            except subprocess.TimeoutExpired:
                continue
            raise RuntimeError(f"langgraph dev exited with {code}:\n{self.log_tail()}")
        raise RuntimeError(f"langgraph dev not ready after {self._startup_timeout_s}s")

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/ok", timeout=1.0) as response:  # noqa: S310
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text("utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        """SIGTERM the server's process group, SIGKILL it if it does not exit in time."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        log, self._log = self._log, None
        if log is not None:
            log.close()
