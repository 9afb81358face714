"""The replicas of ``bench/partition.py``: each a ``switchboard run`` inside a namespace of
``bench/netns.py``, its config, and the fake Telegram's health-checking balancer.

A replica is ``python -m bot run -c CONFIG`` started with ``ip netns exec`` (which execs it, so
the pid is the daemon's own: SIGSTOP reaches it); its HTTP server (``/readyz`` and the webhook)
listens on its namespace's services address; Telegram, the model and PostgreSQL are the host
ends of its links (the forwarders of ``bench/netns.py``). ``fleet`` starts replicas and stops
them however the block ends (SIGCONT first: a stopped process would not stop). Blocking calls.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typing_extensions import override

from bench.netns import Host
from bench.replicas_fleet import POOL_SIZE, SECRET, Replica
from bench.soak_daemon import daemon_env
from tests.fakes.telegram_api import FakeTelegram

REPO = Path(__file__).resolve().parents[1]
HTTP_PORT = 8080
"""Each replica's HTTP port, on its namespace's address (every namespace has its own ports)."""
HTTP_OK = 200
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass(kw_only=True)
class NsReplica(Replica):
    """A replica run inside ``host``'s namespace, its HTTP server on the namespace's address."""

    host: Host

    @property
    @override
    def webhook_url(self) -> str:
        return f"http://{self.host.services.ns_addr}:{self.port}/telegram/webhook"

    @override
    def start(self) -> None:
        self._out = self.log.open("ab")
        argv = [sys.executable, "-m", "bot", "run", "-c", str(self.config)]
        self.process = subprocess.Popen(  # noqa: S603 - our own interpreter, in our namespace
            self.host.command(argv), stdin=subprocess.DEVNULL, stdout=self._out,
            stderr=subprocess.STDOUT, env=_env(), cwd=REPO,
        )  # fmt: skip

    @override
    def ready(self, timeout_s: float = 2.0) -> bool:
        url = f"http://{self.host.services.ns_addr}:{self.port}/readyz"
        try:
            with _NO_PROXY.open(url, timeout=timeout_s) as response:
                return int(response.status) == HTTP_OK
        except (urllib.error.URLError, OSError):
            return False

    def send(self, sig: signal.Signals) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)


def _env() -> dict[str, str]:
    env = daemon_env()
    for name in ("http_proxy", "https_proxy", "all_proxy"):
        env.pop(name, None)
        env.pop(name.upper(), None)
    return env


@dataclass(frozen=True, slots=True, kw_only=True)
class World:
    """Where the fakes and the store are, as seen from the host."""

    fake: FakeTelegram
    telegram_port: int
    model_port: int
    store_url: str
    schema: str


def port_of(origin: str) -> int:
    port = urllib.parse.urlsplit(origin).port
    if port is None:
        raise ValueError(f"no port in {origin!r}")
    return port


def loopback_port(url: str) -> int:
    """The port of a store URL on this machine's loopback (the forwarders relay there)."""
    parts = urllib.parse.urlsplit(url)
    if parts.hostname not in ("127.0.0.1", "localhost"):
        raise ValueError(f"--store-url must name a server on 127.0.0.1, not {parts.hostname!r}")
    return parts.port or 5432


def _store_url_from(host: Host, url: str) -> str:
    """``url`` with its host replaced by the host end of ``host``'s store link."""
    parts = urllib.parse.urlsplit(url)
    user = parts.netloc.rpartition("@")[0]
    netloc = f"{user}@" if user else ""
    netloc += f"{host.store.host_addr}:{parts.port or 5432}"
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def write_config(  # noqa: PLR0913 - what a replica's config is made of
    work: Path, name: str, host: Host, world: World, *, expiry_s: float, grace_s: float
) -> NsReplica:
    outside = host.services.host_addr
    data: dict[str, Any] = {
        "config_version": 1, "state_dir": str(work / name),
        "log": {"level": "INFO", "format": "text"},
        "http": {"enabled": True, "host": host.services.ns_addr, "port": HTTP_PORT},
        "access": {"dm_policy": "open"},
        "agent": {"backend": "embedded", "run_timeout_s": 60, "max_concurrent_runs": 64,
                  "model": {"base_url": f"http://{outside}:{world.model_port}/v1",
                            "api_key": "sk-bench", "name": "soak-model"}},
        "store": {"url": _store_url_from(host, world.store_url), "schema": world.schema,
                  "pool_size": POOL_SIZE},
        "daemon": {"shutdown_grace_s": grace_s, "replica_expiry_s": expiry_s},
        "channels": {"telegram": {
            "enabled": True, "token": world.fake.token,
            "api_base_url": f"http://{outside}:{world.telegram_port}", "mode": "webhook",
            "webhook": {"url": f"http://{host.services.ns_addr}:{HTTP_PORT}/telegram/webhook",
                        "secret_token": SECRET}}},
    }  # fmt: skip
    config = work / f"{name}.yaml"
    config.write_text(json.dumps(data, indent=1))  # JSON is YAML
    return NsReplica(name=name, config=config, port=HTTP_PORT, log=work / f"{name}.log",
                     host=host)  # fmt: skip


class HealthBalancer:
    """The fake Telegram's rotation, kept to the replicas whose ``/readyz`` answers ready (one
    checking thread per replica); never emptied (with none ready it stays as it was)."""

    def __init__(self, fake: FakeTelegram, replicas: list[NsReplica]) -> None:
        self._fake = fake
        self._replicas = replicas
        self._ready = {r.name: True for r in replicas}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._check, args=(r,), name=f"health:{r.name}", daemon=True)
            for r in replicas
        ]
        self.changes: list[tuple[float, list[str]]] = []

    def __enter__(self) -> HealthBalancer:
        self._apply()
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=5)

    def _check(self, replica: NsReplica) -> None:
        while not self._stop.wait(0.25):
            ready = replica.alive() and replica.ready(timeout_s=1.0)
            with self._lock:
                changed = self._ready[replica.name] != ready
                self._ready[replica.name] = ready
            if changed:
                self._apply()

    def _apply(self) -> None:
        with self._lock:
            chosen = [r for r in self._replicas if self._ready[r.name]]
            if chosen:
                self._fake.balance_webhook([r.webhook_url for r in chosen])
                self.changes.append((time.monotonic(), [r.name for r in chosen]))


@contextlib.contextmanager
def fleet(replicas: list[NsReplica], timeout_s: float = 90.0) -> Iterator[list[NsReplica]]:
    """Every replica started and ready; on the way out each is continued (a stalled one would
    not stop), sent SIGTERM together, and waited for (SIGKILL past the grace)."""
    try:
        for replica in replicas:
            replica.start()
        deadline = time.monotonic() + timeout_s
        waiting = list(replicas)
        while waiting:
            for replica in list(waiting):
                if not replica.alive():
                    raise RuntimeError(f"{replica.name} exited before ready:\n{replica.tail()}")
                if replica.ready():
                    waiting.remove(replica)
            if time.monotonic() > deadline:
                raise RuntimeError(f"not ready within {timeout_s:g} s: {waiting[0].name}")
            time.sleep(0.1)
        yield replicas
    finally:
        stop_all(replicas)


def stop_all(replicas: list[NsReplica]) -> None:
    for replica in replicas:
        replica.send(signal.SIGCONT)
        replica.terminate()
    for replica in replicas:
        replica.stop()
