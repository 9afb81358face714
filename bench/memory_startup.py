"""Startup time and memory (design §16): time to READY, RSS idle and with 10 000 conversations.

Both parts run the daemon with its default agent (embedded LangGraph with the offline echo
model) and the Telegram channel against the fake Bot API, which runs with its load in a child
process of its own (``bench/telegram_load.py``).

- startup: ``python -m bot run`` — the ``switchboard run`` command — as a subprocess, timed
  from spawning it to its sd_notify ``READY=1`` (this script listens on ``$NOTIFY_SOCKET`` as
  systemd would); median of ``--starts``. Its RSS is read when READY and again after it has
  sat idle for ``--idle-s`` seconds. Without HTTP (a Telegram daemon that polls), unless
  ``--http`` serves it on a free loopback port as the shipped default does (health, metrics:
  aiohttp and its TLS contexts load, about 10 MB).
- conversations: the same daemon in a spawned process, with Telegram's send pacing off (at
  Telegram's 30 messages/s the load would take minutes; pacing holds no memory), gets one
  message from each of ``--conversations`` new chats, in waves, and answers each in its own
  thread. RSS when READY and after the last answer.

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.daemon_setup import settings_data, telegram_channel  # noqa: E402
from bench.telegram_load import Endpoints, Platform  # noqa: E402
from bot.app import Daemon, DaemonOptions, Overrides  # noqa: E402
from bot.config.settings import Settings  # noqa: E402

READY_TIMEOUT_S = 120.0
WAVE = 200
CHATS_FROM = 1_000_001


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError(f"no VmRSS for process {pid}")


# --------------------------------------------------------------------------- startup


def start_once(api: Endpoints, work: Path, idle_s: float, *, http: bool) -> dict[str, float]:
    """Spawn ``python -m bot run``, wait for READY=1, read its RSS, stop it."""
    config = work / "switchboard.yaml"
    data = settings_data(api, work / "state")
    if http:
        data["http"] = {"enabled": True, "host": "127.0.0.1", "port": 0}
    config.write_text(json.dumps(data))  # JSON is YAML
    notify_path = work / "notify.sock"
    notify_path.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.endswith("API_KEY")}
    env["NOTIFY_SOCKET"] = str(notify_path)
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as listener:
        listener.bind(str(notify_path))
        listener.settimeout(READY_TIMEOUT_S)
        started = time.monotonic()
        daemon = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-m", "bot", "run", "--config", str(config)],
            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            while b"READY=1" not in listener.recv(4096):
                pass
            ready_s = time.monotonic() - started
            at_ready = rss_mb(daemon.pid)
            time.sleep(idle_s)  # an idle daemon: what it holds once nothing happens
            idle = rss_mb(daemon.pid)
        finally:
            daemon.send_signal(signal.SIGTERM)
            _, errors = daemon.communicate(timeout=60)
    if daemon.returncode != 0:
        raise RuntimeError(f"the daemon exited {daemon.returncode}: {errors.decode()[-2000:]}")
    return {"ready_s": ready_s, "rss_ready_mb": at_ready, "rss_idle_mb": idle}


# --------------------------------------------------------------------------- conversations


def _serve_daemon(conn: Connection, api: Endpoints, state_dir: str) -> None:
    """The spawned daemon process: run until told to stop, saying when READY."""
    asyncio.run(_run_daemon(conn, api, Path(state_dir)))


async def _run_daemon(conn: Connection, api: Endpoints, state_dir: Path) -> None:
    settings = Settings.model_validate(settings_data(api, state_dir))
    channel = telegram_channel(settings, pacing=False)
    daemon = Daemon(settings, DaemonOptions(overrides=Overrides(channels=[channel])))
    task = asyncio.create_task(daemon.run(), name="bench-daemon")
    await daemon.ready.wait()
    conn.send("ready")
    await asyncio.to_thread(conn.recv)
    daemon.request_stop()
    await task


def conversations(platform: Platform, count: int, work: Path) -> dict[str, float]:
    context = multiprocessing.get_context("spawn")
    conn, child = context.Pipe()
    daemon = context.Process(
        target=_serve_daemon, args=(child, platform.api, str(work / "state")), name="daemon"
    )
    daemon.start()
    try:
        if not conn.poll(READY_TIMEOUT_S):
            raise RuntimeError("the daemon did not become ready")
        conn.recv()
        assert daemon.pid is not None
        at_ready = rss_mb(daemon.pid)
        started = time.monotonic()
        for first in range(CHATS_FROM, CHATS_FROM + count, WAVE):
            chats = list(range(first, min(first + WAVE, CHATS_FROM + count)))
            platform.drive(chats, 1, "c")
        seconds = time.monotonic() - started
        loaded = rss_mb(daemon.pid)
    finally:
        conn.send("stop")
        daemon.join(timeout=60)
    return {
        "conversations": count, "seconds": round(seconds, 1), "rss_ready_mb": at_ready,
        "rss_after_mb": loaded, "kb_per_conversation": round((loaded - at_ready) * 1024 / count, 2),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--idle-s", type=float, default=5.0)
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--http", action="store_true", help="serve HTTP as the default does")
    args = parser.parse_args()
    with Platform() as platform, tempfile.TemporaryDirectory() as tmp:
        starts = []
        for index in range(args.starts):
            work = Path(tmp) / f"start-{index}"
            work.mkdir()
            starts.append(start_once(platform.api, work, args.idle_s, http=args.http))
        loaded = conversations(platform, args.conversations, Path(tmp) / "load")
    result = {
        "bench": "memory_startup",
        "http": args.http,
        "startup_to_ready_s": round(statistics.median(s["ready_s"] for s in starts), 2),
        "startup_runs_s": [round(s["ready_s"], 2) for s in starts],
        "rss_ready_mb": statistics.median(s["rss_ready_mb"] for s in starts),
        "rss_idle_mb": statistics.median(s["rss_idle_mb"] for s in starts),
        "with_conversations": loaded,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
