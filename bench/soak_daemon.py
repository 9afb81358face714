"""``switchboard run`` as a subprocess for the soak: config, READY, kill -9, SIGTERM, the CLI.

The daemon runs ``python -m bot run -c CONFIG`` with the embedded agent against the soak's
model fake and Telegram (polling) against the soak's fake Bot API; its HTTP server listens on a
free loopback port so ``switchboard status`` can read ``/readyz``. READY is taken from the
daemon's sd_notify ``READY=1`` on a socket this module listens on, as systemd would. The
daemon's stderr goes to ``daemon.log`` in the phase's directory (appended across restarts).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from bench.soak_model import MARKER

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def daemon_env() -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "SWITCHBOARD_", "LANGCHAIN_", "LANGSMITH_"))
        and not k.endswith("API_KEY")
    }
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


@dataclass(frozen=True, slots=True, kw_only=True)
class Endpoints:
    telegram_origin: str
    token: str
    model_url: str


def write_config(work: Path, api: Endpoints, *, grace_s: float) -> Path:
    data = {
        "config_version": 1, "state_dir": str(work / "state"),
        "log": {"level": "INFO", "format": "text"},
        "http": {"enabled": True, "host": "127.0.0.1", "port": free_port()},
        "agent": {"backend": "embedded", "run_timeout_s": 60, "max_concurrent_runs": 8,
                  "model": {"base_url": api.model_url, "api_key": "sk-soak", "name": "soak-model"}},
        "access": {"dm_policy": "open"},
        "daemon": {"shutdown_grace_s": grace_s},
        "channels": {"telegram": {"enabled": True, "token": api.token,
                                  "api_base_url": api.telegram_origin}},
    }  # fmt: skip
    config = work / "switchboard.yaml"
    config.write_text(json.dumps(data, indent=1))  # JSON is YAML
    return config


@dataclass(slots=True)
class DaemonProcess:
    """One state dir, one config; started (and restarted) as often as the phase needs."""

    work: Path
    config: Path
    ready_timeout_s: float = 90.0
    starts: int = 0
    exit_codes: list[int] = field(default_factory=list)
    ready_s: list[float] = field(default_factory=list)
    _process: subprocess.Popen[bytes] | None = None
    _listener: socket.socket | None = None
    _log: IO[bytes] | None = None

    @property
    def log_path(self) -> Path:
        return self.work / "daemon.log"

    @property
    def db_path(self) -> Path:
        return self.work / "state" / "switchboard.db"

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> float:
        """Spawns the daemon and waits (bounded) for READY=1; returns the seconds it took."""
        if self.alive():
            raise RuntimeError("the daemon is already running")
        listener = self._notify_socket()
        listener.setblocking(False)  # noqa: FBT003 - the socket API
        with contextlib.suppress(BlockingIOError):
            while True:  # what an earlier process said is stale
                listener.recv(4096)
        env = daemon_env()
        env["NOTIFY_SOCKET"] = str(self.work / "notify.sock")
        if self._log is None:
            self._log = self.log_path.open("ab")
        self._log.write(f"---- soak: start #{self.starts + 1}\n".encode())
        self._log.flush()
        started = time.monotonic()
        self._process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-m", "bot", "run", "-c", str(self.config)],
            cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log,
        )  # fmt: skip
        self.starts += 1
        deadline = started + self.ready_timeout_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RuntimeError(f"the daemon was not READY within {self.ready_timeout_s:g} s")
            if self._process.poll() is not None:
                code = self._process.returncode
                raise RuntimeError(f"the daemon exited {code} before READY; see {self.log_path}")
            listener.settimeout(min(remaining, 0.5))
            with contextlib.suppress(TimeoutError):
                if b"READY=1" in listener.recv(4096):
                    break
        seconds = time.monotonic() - started
        self.ready_s.append(round(seconds, 2))
        return seconds

    def kill9(self) -> None:
        process = self._process
        if process is None or process.poll() is not None:
            raise RuntimeError("no daemon to kill")
        process.send_signal(signal.SIGKILL)
        self.exit_codes.append(process.wait(timeout=30))
        self._note("killed with SIGKILL")

    def sigterm(self, timeout_s: float) -> int:
        """SIGTERM and wait up to ``timeout_s`` for the exit; kill -9 beyond that (code -9)."""
        process = self._process
        if process is None or process.poll() is not None:
            raise RuntimeError("no daemon to stop")
        process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
            code = -9
        self.exit_codes.append(code)
        self._note(f"stopped with SIGTERM: exit {code}")
        return code

    def close(self) -> None:
        """Always safe: stops a running daemon (SIGTERM, then SIGKILL), closes the files."""
        if self.alive():
            with contextlib.suppress(RuntimeError):  # it exited meanwhile (a Ctrl-C reached it)
                self.sigterm(timeout_s=40)
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def _note(self, text: str) -> None:
        if self._log is not None:
            self._log.write(f"---- soak: {text}\n".encode())
            self._log.flush()

    def _notify_socket(self) -> socket.socket:
        if self._listener is None:
            path = self.work / "notify.sock"
            path.unlink(missing_ok=True)
            self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            self._listener.bind(str(path))
        return self._listener

    # ------------------------------------------------------------------ store and log

    def backlog(self) -> tuple[int, int]:
        """(unfinished inbound messages, pending outbox rows), read from the store."""
        if not self.db_path.exists():
            return (0, 0)
        try:
            with contextlib.closing(sqlite3.connect(self.db_path, timeout=5)) as db:
                db.execute("PRAGMA query_only = ON")
                inbound = db.execute(
                    "SELECT count(*) FROM inbound WHERE status IN ('accepted', 'running')"
                ).fetchone()[0]
                outbox = db.execute("SELECT count(*) FROM outbox WHERE state = 'pending'")
                return (int(inbound), int(outbox.fetchone()[0]))
        except sqlite3.Error:
            return (-1, -1)  # not readable (yet): not settled

    def journal(self) -> dict[str, str]:
        """``q<chat>-<n>`` -> "status: reason" of its inbound journal row."""
        if not self.db_path.exists():
            return {}
        with contextlib.closing(sqlite3.connect(self.db_path, timeout=5)) as db:
            rows = db.execute(
                "SELECT json_extract(message, '$.text'), status, reason FROM inbound"
            ).fetchall()
        found: dict[str, str] = {}
        for text, status, reason in rows:
            for chat, index in MARKER.findall(str(text or "")):
                found[f"q{chat}-{index}"] = f"{status}: {reason}"
        return found

    def dead_rows(self) -> list[dict[str, object]]:
        if not self.db_path.exists():
            return []
        with contextlib.closing(sqlite3.connect(self.db_path, timeout=5)) as db:
            rows = db.execute(
                "SELECT id, chat_id, idempotency_key, attempts, last_error FROM outbox "
                "WHERE state = 'dead' ORDER BY id"
            ).fetchall()
        keys = ("id", "chat_id", "key", "attempts", "last_error")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def log_findings(self, limit: int = 6) -> dict[str, object]:
        """Tracebacks and ERROR lines in the daemon's log (a few samples of each)."""
        if not self.log_path.exists():
            return {"tracebacks": 0, "errors": 0}
        lines = self.log_path.read_text(errors="replace").splitlines()
        errors = [line for line in lines if " ERROR " in line or " CRITICAL " in line]
        tracebacks = [i for i, line in enumerate(lines) if line.startswith("Traceback")]
        found: dict[str, object] = {"tracebacks": len(tracebacks), "errors": len(errors)}
        if errors:
            found["error_samples"] = [line[:300] for line in errors[:limit]]
        if tracebacks:
            first = tracebacks[0]
            found["first_traceback"] = [line[:200] for line in lines[first : first + 30]]
        return found


def run_cli(config: Path, *args: str, timeout_s: float = 60.0) -> tuple[int, float, str]:
    """One operator command against the daemon's store: (exit code, seconds, stderr tail)."""
    started = time.monotonic()
    try:
        done = subprocess.run(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-m", "bot", *args, "-c", str(config)],
            cwd=REPO, env=daemon_env(), capture_output=True, text=True,
            timeout=timeout_s, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return (-1, time.monotonic() - started, "timed out")
    return (done.returncode, time.monotonic() - started, (done.stderr or "")[-400:])
