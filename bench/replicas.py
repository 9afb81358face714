"""Replicas on one PostgreSQL store against one daemon on SQLite: throughput, latency, failover.

Every daemon is the real ``python -m bot run -c CONFIG`` (what ``switchboard run`` runs), a
subprocess with Telegram in webhook mode and the embedded LangGraph agent against a fake
OpenAI-compatible model that answers after exactly ``--model-latency`` seconds in one chunk
(``bench/replicas_load.py``); the fake Telegram (with its load balancer) and the model run on
threads of this process, which only drives the load. No network but 127.0.0.1.

Throughput, under the same load for each setup: ``--chats`` chats, each sending its next
question once the previous one's answer arrived (closed loop), ``--messages`` per chat, after a
warm-up question per chat that is not measured (it opens the chats' threads and leases):

- sqlite: one daemon on SQLite (no ``store`` block);
- pg1: one daemon on a fresh PostgreSQL schema;
- pg3: three daemons on one fresh schema behind the fake Telegram's balancer
  (``FakeTelegram.balance_webhook``: every webhook post goes to the next replica in turn, so a
  chat's messages are journaled by any replica and handed to the one holding the chat).

Each reports answers/s (answers over the seconds from the first question to the last answer),
p50/p99 latency (question posted on the fake → its answer recorded there) and CPU over the
measured load (``bench/replicas_cpu.py``: the daemons' and PostgreSQL's per answer, and the
share of the machine's CPUs busy). Ratios: pg1 to sqlite (target ≥ 0.7) and pg3 to pg1, and to
the physical limit of the closed loop (chats ÷ model latency). The shipped Telegram pacing
holds each daemon to its bot-wide send rate (``pacing_cap_per_daemon``), which may lie below
that limit; a daemon short of CPU stays below both.

Failover: three daemons on a fresh schema with ``daemon.replica_expiry_s`` = ``--expiry`` under
the same closed loop; once each chat has had about three answers, the replica holding the most
chats (``chat_leases``) is killed with -9 while its chats' turns are in flight, just after its
heartbeat moved (the worst case: its leases lapse a whole expiry after the kill), and the
balancer stops sending to it (as a health-checking one would; ``bench/replicas_failover.py``).
Failover time is from the kill until every chat that replica held and had not finished has got
an answer again (to the question in flight or a later one); target ``--expiry`` + 2 s. Every
setup ends with every question answered exactly once (the model names what it answers; judged
from the chats as they stand): a lost or duplicated answer, or a setup that fails, makes the
exit status 1.

Every wait is bounded; replicas are stopped (SIGTERM, then SIGKILL) and schemas dropped
however the run ends, Ctrl-C included. ``--keep DIR`` keeps configs, state and logs there.
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.replicas_cpu import CpuMeter  # noqa: E402
from bench.replicas_failover import failover  # noqa: E402
from bench.replicas_fleet import Backend, Fleet, Run, log_findings  # noqa: E402
from bench.replicas_load import ClosedLoop, Lost, PromptModel, score, summary  # noqa: E402
from bench.replicas_store import check_server, fresh_schema, leases, replica_ids  # noqa: E402
from channels.telegram import TELEGRAM_CAPABILITIES  # noqa: E402
from tests.fakes.telegram_api import FakeTelegram  # noqa: E402

SETUPS = ("sqlite", "pg1", "pg3", "failover")
DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"
PG1_TARGET = 0.7
STALL_S = 60.0
EXIT_INTERRUPTED = 130


def throughput(run: Run, setup: str) -> dict[str, Any]:
    count = 3 if setup == "pg3" else 1
    with contextlib.ExitStack() as stack:
        fake = stack.enter_context(FakeTelegram())
        backend = Backend()
        if setup != "sqlite":
            schema = stack.enter_context(fresh_schema(run.store_url, f"bench_{setup}"))
            backend = Backend(url=run.store_url, schema=schema)
        fleet = Fleet(run.work / setup, setup, count, fake=fake, model_url=run.model_url,
                      backend=backend)  # fmt: skip
        stack.enter_context(fleet)
        warm = ClosedLoop(fake, run.chats, 0, 0)
        warm.start()
        warm.run(stall_s=STALL_S, deadline=run.deadline())
        warmup = summary(warm.latencies())
        load = ClosedLoop(fake, run.chats, 1, run.messages)
        meter = CpuMeter(fleet.by_pid())
        started = time.monotonic()
        load.start()
        result: dict[str, Any] = {"daemons": count, "ready_s": fleet.ready_s}
        try:
            load.run(stall_s=STALL_S, deadline=run.deadline())
        except Lost as exc:
            result["error"] = str(exc)
        seconds = max((a.at for a in load.answers), default=started) - started
        result |= summary(load.latencies(), seconds)
        result["cpu"] = meter.read(len(load.answers))
        result["warmup"] = {"p50_ms": warmup.get("p50_ms"), "max_ms": warmup.get("max_ms")}
        if backend.url is not None and count > 1:
            result["chats_per_daemon"] = _chats_per_daemon(fleet, backend)
        fleet.stop()
        result["exit_codes"] = fleet.exit_codes()
        result["score"] = score(fake, run.chats, 0, run.messages)
        result["logs"] = log_findings(fleet.replicas)
    return result


def _chats_per_daemon(fleet: Fleet, backend: Backend) -> dict[str, int]:
    assert backend.url is not None
    assert backend.schema is not None
    names = {rid: fleet.by_pid()[pid].name for pid, rid in
             replica_ids(backend.url, backend.schema).items() if pid in fleet.by_pid()}  # fmt: skip
    held: dict[str, int] = {}
    for owner in leases(backend.url, backend.schema).values():
        name = names.get(owner, owner)
        held[name] = held.get(name, 0) + 1
    return dict(sorted(held.items()))


def _ratio(a: dict[str, Any] | None, b: dict[str, Any] | None) -> float | None:
    if not a or not b or not a.get("answers_per_s") or not b.get("answers_per_s"):
        return None
    return round(float(a["answers_per_s"]) / float(b["answers_per_s"]), 3)


def _ok(entry: dict[str, Any]) -> bool:
    found = entry.get("score") or {}
    return "error" not in entry and not found.get("lost") and not found.get("duplicated")


# --------------------------------------------------------------------------- main


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--chats", type=int, default=20)
    parser.add_argument("--messages", type=int, default=10, help="per chat (default 10)")
    parser.add_argument("--model-latency", type=float, default=0.5, metavar="S",
                        help="seconds the fake model takes per answer (default 0.5)")  # fmt: skip
    parser.add_argument(
        "--expiry", type=float, default=15.0, metavar="S",
        help="daemon.replica_expiry_s of the failover fleet (default 15)",
    )  # fmt: skip
    parser.add_argument("--store-url", default=DEFAULT_URL)
    parser.add_argument(
        "--only", default=",".join(SETUPS),
        help=f"comma-separated subset of {','.join(SETUPS)} (default: all)",
    )  # fmt: skip
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="keep configs, state and the daemons' logs under DIR")  # fmt: skip
    args = parser.parse_args()
    args.only = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(args.only) - set(SETUPS))
    if unknown or not args.only:
        parser.error(f"--only: unknown setup(s) {unknown}; choose from {','.join(SETUPS)}")
    if args.chats < 1 or args.messages < 1 or args.model_latency <= 0 or args.expiry <= 0:
        parser.error("--chats and --messages must be ≥ 1, --model-latency and --expiry > 0")
    if "failover" in args.only and args.messages < 2:
        parser.error("failover needs --messages ≥ 2")
    return args


@contextlib.contextmanager
def _interruptible() -> Iterator[None]:
    """SIGTERM ends the run like Ctrl-C; a second signal does not cut the cleanup short."""

    def stop(signum: int, frame: FrameType | None) -> None:  # noqa: ARG001 - signal API
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def _work_dir(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep.resolve()
        return
    path = Path(tempfile.mkdtemp(prefix="switchboard-replicas-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _each(
    setups: list[str], measure: Callable[[str], dict[str, Any]], results: dict[str, Any]
) -> None:
    """Every setup, in order, into ``results``; one that fails is reported with its error, and
    the rest run."""
    for setup in setups:
        try:
            results[setup] = measure(setup)
        except Exception as exc:  # noqa: BLE001 - reported in the JSON line, exit status 1
            results[setup] = {"error": f"{type(exc).__name__}: {exc}"[:2000]}


def main() -> int:
    args = _arguments()
    started = time.monotonic()
    limit = args.chats / args.model_latency
    report: dict[str, Any] = {
        "bench": "replicas", "chats": args.chats, "messages_per_chat": args.messages,
        "model_latency_s": args.model_latency, "cpus": os.cpu_count(),
        "limit_answers_per_s": round(limit, 2),
        "pacing_cap_per_daemon": TELEGRAM_CAPABILITIES.global_rate_per_s,
    }  # fmt: skip
    results: dict[str, Any] = {}
    interrupted = False
    try:
        with _interruptible(), _work_dir(args.keep) as work, \
                PromptModel(args.model_latency) as model:  # fmt: skip
            if any(setup != "sqlite" for setup in args.only):
                check_server(args.store_url)
            run = Run(work=work, model_url=model.base_url, store_url=args.store_url,
                      chats=list(range(1, args.chats + 1)), messages=args.messages,
                      expiry_s=args.expiry)  # fmt: skip

            def measure(setup: str) -> dict[str, Any]:
                return failover(run) if setup == "failover" else throughput(run, setup)

            _each(args.only, measure, results)
            report["model_requests"] = model.requests_served
    except KeyboardInterrupt:
        interrupted = True  # everything started is stopped and dropped by now
    report |= results
    sqlite, pg1, pg3 = (results.get(name) for name in ("sqlite", "pg1", "pg3"))
    pg1_ratio = _ratio(pg1, sqlite)
    report["ratios"] = {
        "pg1_to_sqlite": pg1_ratio, "pg1_to_sqlite_target": PG1_TARGET,
        "pg1_to_sqlite_met": None if pg1_ratio is None else pg1_ratio >= PG1_TARGET,
        "pg3_to_pg1": _ratio(pg3, pg1),
        **{f"{name}_to_limit": round(float(entry["answers_per_s"]) / limit, 3)
           for name, entry in results.items() if entry.get("answers_per_s")},
    }  # fmt: skip
    ok = not interrupted and all(_ok(entry) for entry in results.values())
    report["ok"] = ok
    if interrupted:
        report["interrupted"] = True
    report["seconds"] = round(time.monotonic() - started, 1)
    report["kept"] = None if args.keep is None else str(args.keep.resolve())
    print(json.dumps(report))
    return EXIT_INTERRUPTED if interrupted else 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
