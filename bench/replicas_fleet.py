"""Daemon replicas for ``bench/replicas.py``: their configs, processes and store.

Each replica is ``python -m bot run -c CONFIG`` (what ``switchboard run`` runs) with Telegram in
webhook mode on its own loopback port and the embedded agent against the benchmark's model;
its store is SQLite under its state dir (no ``store`` block) or a PostgreSQL schema shared by
the fleet. Its log (stdout and stderr) is ``<name>.log`` in the work directory. A ``Fleet``
starts its replicas together, waits (bounded) until each one's ``/readyz`` says ready, puts the
fake Telegram's load balancer in front of them, and stops every replica it started when it
ends, however it ends: SIGTERM, then SIGKILL past the grace. Everything here blocks; nothing
needs an event loop.
"""

from __future__ import annotations

import contextlib
import json
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from bench.soak_daemon import daemon_env, free_port
from tests.fakes.telegram_api import FakeTelegram

REPO = Path(__file__).resolve().parents[1]
SECRET = "bench-replica-secret"  # noqa: S105 - the webhook secret of the benchmark
POOL_SIZE = 5
"""``store.pool_size`` of every PostgreSQL replica (the shipped default)."""
STOP_GRACE_S = 20.0
HTTP_OK = 200
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))
_LEVEL = re.compile(r"^\S+ \S+ (WARNING|ERROR|CRITICAL) (.*)$")
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True, slots=True, kw_only=True)
class Backend:
    """Where a fleet keeps its state: ``url`` None is SQLite in each state dir."""

    url: str | None = None
    schema: str | None = None
    expiry_s: float | None = None
    """``daemon.replica_expiry_s``; None leaves the shipped default."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    """What every setup of one benchmark run shares."""

    work: Path
    model_url: str
    store_url: str
    chats: list[int]
    messages: int
    expiry_s: float

    def deadline(self, slack_s: float = 120.0) -> float:
        """Generous: the closed loop at one answer a second per chat, plus ``slack_s``."""
        return time.monotonic() + slack_s + self.messages * 2.0


@dataclass(kw_only=True)
class Replica:
    """One daemon: its config and, while it runs, its process."""

    name: str
    config: Path
    port: int
    log: Path
    process: subprocess.Popen[bytes] | None = None
    exit_codes: list[int] = field(default_factory=list)
    _out: IO[bytes] | None = field(default=None, repr=False)
    _terminated: bool = field(default=False, repr=False)

    @property
    def webhook_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/telegram/webhook"

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        self._out = self.log.open("ab")
        self.process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-m", "bot", "run", "-c", str(self.config)],
            stdin=subprocess.DEVNULL, stdout=self._out, stderr=subprocess.STDOUT,
            env=daemon_env(), cwd=REPO,
        )  # fmt: skip

    def ready(self) -> bool:
        try:
            url = f"http://127.0.0.1:{self.port}/readyz"
            with _NO_PROXY.open(url, timeout=2) as response:
                return int(response.status) == HTTP_OK
        except (urllib.error.URLError, OSError):
            return False

    def kill9(self) -> float:
        """SIGKILL; returns the monotonic time just before the signal went."""
        assert self.process is not None
        at = time.monotonic()
        self.process.send_signal(signal.SIGKILL)
        self._reap(self.process.wait(timeout=30))
        return at

    def terminate(self) -> None:
        """SIGTERM, once (a second one may cut the daemon's graceful stop short)."""
        if self.process is not None and not self._terminated and self.process.poll() is None:
            self._terminated = True
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGTERM)

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """SIGTERM and wait up to ``grace_s``; SIGKILL beyond that. Safe to call twice."""
        process = self.process
        if process is None:
            return
        if process.poll() is None:
            self.terminate()
            try:
                process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)
        self._reap(int(process.returncode))

    def _reap(self, code: int) -> None:
        self.exit_codes.append(code)
        self.process = None
        self._terminated = False
        if self._out is not None:
            self._out.close()
            self._out = None

    def tail(self, lines: int = 40) -> str:
        if not self.log.exists():
            return ""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def write_config(  # noqa: PLR0913 - what a replica's config is made of
    work: Path, name: str, *, fake: FakeTelegram, model_url: str, backend: Backend,
    max_concurrent_runs: int = 64,
) -> Replica:  # fmt: skip
    port = free_port()
    daemon: dict[str, Any] = {"shutdown_grace_s": 10}
    if backend.expiry_s is not None:
        daemon["replica_expiry_s"] = backend.expiry_s
    data: dict[str, Any] = {
        "config_version": 1, "state_dir": str(work / name),
        "log": {"level": "INFO", "format": "text"},
        "http": {"enabled": True, "host": "127.0.0.1", "port": port},
        "access": {"dm_policy": "open"},
        "agent": {"backend": "embedded", "run_timeout_s": 60,
                  "max_concurrent_runs": max_concurrent_runs,
                  "model": {"base_url": model_url, "api_key": "sk-bench", "name": "soak-model"}},
        "daemon": daemon,
        "channels": {"telegram": {
            "enabled": True, "token": fake.token, "api_base_url": fake.api_origin,
            "mode": "webhook",
            "webhook": {"url": f"http://127.0.0.1:{port}/telegram/webhook",
                        "secret_token": SECRET}}},
    }  # fmt: skip
    if backend.url is not None:
        data["store"] = {"url": backend.url, "schema": backend.schema, "pool_size": POOL_SIZE}
    config = work / f"{name}.yaml"
    config.write_text(json.dumps(data, indent=1))  # JSON is YAML
    return Replica(name=name, config=config, port=port, log=work / f"{name}.log")


class Fleet:
    """``with Fleet(...) as fleet:`` — ``count`` replicas, ready, behind the balancer."""

    def __init__(  # noqa: PLR0913 - what differs between the benchmark's fleets
        self, work: Path, prefix: str, count: int, *, fake: FakeTelegram, model_url: str,
        backend: Backend, ready_timeout_s: float = 90.0,
    ) -> None:  # fmt: skip
        work.mkdir(parents=True, exist_ok=True)
        self.fake = fake
        self.replicas = [
            write_config(work, f"{prefix}-{i}", fake=fake, model_url=model_url, backend=backend)
            for i in range(count)
        ]
        self.ready_timeout_s = ready_timeout_s
        self.ready_s = 0.0

    def __enter__(self) -> Fleet:
        try:
            started = time.monotonic()
            for replica in self.replicas:
                replica.start()
            self._wait_ready(started + self.ready_timeout_s)
            self.ready_s = round(time.monotonic() - started, 2)
            self.balance()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _wait_ready(self, deadline: float) -> None:
        waiting = list(self.replicas)
        while waiting:
            for replica in list(waiting):
                if not replica.alive():
                    raise RuntimeError(f"{replica.name} exited before ready:\n{replica.tail()}")
                if replica.ready():
                    waiting.remove(replica)
            if time.monotonic() > deadline:
                names = ", ".join(r.name for r in waiting)
                raise RuntimeError(f"not ready within {self.ready_timeout_s:g} s: {names}")
            time.sleep(0.1)

    def balance(self) -> None:
        """The balancer's rotation: the replicas that run (a health-checking balancer)."""
        self.fake.balance_webhook([r.webhook_url for r in self.replicas if r.alive()])

    def stop(self) -> None:
        for replica in self.replicas:
            replica.terminate()  # all at once: they stop in parallel
        for replica in self.replicas:
            replica.stop()

    def exit_codes(self) -> dict[str, list[int]]:
        return {r.name: list(r.exit_codes) for r in self.replicas}

    def by_pid(self) -> dict[int, Replica]:
        return {r.pid: r for r in self.replicas if r.pid is not None}


# --------------------------------------------------------------------------- logs


def log_findings(replicas: list[Replica], kinds: int = 6) -> dict[str, object]:
    """ERROR and WARNING lines in the replicas' logs, counted by what they say (numbers and
    the replica's name masked), and tracebacks."""
    errors: Counter[str] = Counter()
    warnings: Counter[str] = Counter()
    tracebacks = 0
    for replica in replicas:
        if not replica.log.exists():
            continue
        for line in replica.log.read_text(errors="replace").splitlines():
            found = _LEVEL.match(line)
            if found is not None:
                what = _DIGITS.sub("N", found.group(2))[:160]
                (warnings if found.group(1) == "WARNING" else errors)[what] += 1
            elif line.startswith("Traceback"):
                tracebacks += 1
    return {
        "errors": sum(errors.values()), "warnings": sum(warnings.values()),
        "tracebacks": tracebacks,
        "error_kinds": dict(errors.most_common(kinds)),
        "warning_kinds": dict(warnings.most_common(kinds)),
    }  # fmt: skip
