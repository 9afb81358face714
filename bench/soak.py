"""Fault-injection soak: does ``switchboard run`` lose, duplicate or reorder answers?

Each phase runs the real daemon (``python -m bot run``, a subprocess; embedded agent against
``bench/soak_model.py``; Telegram in polling mode against the fake Bot API with the seeded
send storm of ``bench/soak_telegram.py``) on a fresh state dir, with ``--chats`` users each
sending ``--per-chat`` messages on a seeded schedule (``bench/soak_traffic.py``), and a fault:

- kill9: ``kill -9`` at seeded moments while turns are in flight, restarting on the same
  state dir each time;
- storm: 30 % of ``sendMessage``/``editMessageText`` fail: 429 (retry_after 1-2 s), 5xx
  before the fake took the call, and 5xx after it took it (reported apart: at-least-once
  delivery must resend those, so they may duplicate by design);
- redeliver: every message reaches the bot three times (the update, the same message under a
  new ``update_id``, the same ``update_id`` again after it was confirmed), then after a
  restart every update once more;
- sigterm: SIGTERM under load (must exit 0), then a restart;
- operator: ``status``, ``conversations``, ``outbox list`` and ``pairing approve <bogus>``
  (which must fail with exit 1) against the live store while messages flow.

After the traffic, each phase waits (bounded) until every message is answered and the store
has no unfinished message or pending delivery, stops the daemon with SIGTERM, and scores what
the chats show (``bench/soak_score.py``). Prints one JSON line; exit 0 when every phase has 0
lost, 0 duplicated and 0 reordered (and its fault-specific checks passed), else 1.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.soak_daemon import DaemonProcess, Endpoints, run_cli, write_config  # noqa: E402
from bench.soak_model import SoakModel  # noqa: E402
from bench.soak_score import score  # noqa: E402
from bench.soak_telegram import Storm, StormTelegram  # noqa: E402
from bench.soak_traffic import Traffic  # noqa: E402

PHASES = ("kill9", "storm", "redeliver", "sigterm", "operator")
SHORT_PHASES = ("kill9", "storm", "redeliver")
BOGUS_CODE = "ZZZZZZZZ"
IDLE_S = 3.0
OPERATOR_COMMANDS: tuple[tuple[tuple[str, ...], int], ...] = (
    (("status",), 0),
    (("conversations",), 0),
    (("outbox", "list"), 0),
    (("pairing", "approve", BOGUS_CODE), 1),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Options:
    seed: int = 1
    chats: int = 12
    per_chat: int = 5
    spacing_s: float = 3.0
    kills: int = 3
    min_uptime_s: float = 3.0
    storm_rate: float = 0.3
    operator_calls: int = 20
    settle_s: float = 180.0
    grace_s: float = 15.0
    redeliver_after_restart: bool = True
    phases: tuple[str, ...] = PHASES

    @classmethod
    def short(cls, **overrides: Any) -> Options:
        values: dict[str, Any] = {
            "chats": 3, "per_chat": 3, "spacing_s": 1.5, "kills": 1, "min_uptime_s": 1.0,
            "operator_calls": 4,
            "settle_s": 60.0, "grace_s": 10.0, "redeliver_after_restart": False,
            "phases": SHORT_PHASES,
        }  # fmt: skip
        values.update(overrides)
        return cls(**values)


@dataclass(slots=True)
class Phase:
    """What a phase's fault needs: the running daemon, the fakes, the traffic, the RNG."""

    name: str
    options: Options
    daemon: DaemonProcess
    fake: StormTelegram
    traffic: Traffic
    rng: random.Random
    restarts: int = 0
    ready_at: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)
    checks: dict[str, bool] = field(default_factory=dict)

    def wait_until(self, offset_s: float) -> None:
        """Sleeps to a point of the phase's schedule (a fault's moment, not a condition)."""
        time.sleep(max(0.0, self.traffic.started_at + offset_s - time.monotonic()))

    def in_flight(self) -> int:
        """Messages pushed and not answered yet."""
        pushed = self.traffic.pushed()
        now = score(pushed, {chat: self.fake.chat_messages(chat) for chat in pushed})
        return now.sent - now.answered

    def wait_in_flight(self, timeout_s: float) -> int:
        deadline = time.monotonic() + timeout_s
        while (count := self.in_flight()) == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        return count

    def start(self) -> float:
        seconds = self.daemon.start()
        self.ready_at = time.monotonic()
        return round(seconds, 2)

    def restart(self) -> float:
        self.restarts += 1
        return self.start()


# --------------------------------------------------------------------------- faults


def fault_kill9(phase: Phase) -> None:
    phase.details["min_uptime_s"] = phase.options.min_uptime_s
    window = max(phase.traffic.window_s, 1.0)
    moments = sorted(phase.rng.uniform(0.1, 0.9) * window for _ in range(phase.options.kills))
    kills: list[dict[str, Any]] = []
    for moment in moments:
        phase.wait_until(moment)
        # a message whose agent run is under way at three kills is given up by design (the
        # poison-message guard, design §11); ``min_uptime_s`` lets re-runs make progress first
        time.sleep(max(0.0, phase.ready_at + phase.options.min_uptime_s - time.monotonic()))
        in_flight = phase.wait_in_flight(timeout_s=5.0)
        at = round(time.monotonic() - phase.traffic.started_at, 2)
        phase.daemon.kill9()
        kills.append({"at_s": at, "in_flight": in_flight, "ready_s": phase.restart()})
    phase.details["kills"] = kills
    phase.checks["killed_with_turns_in_flight"] = all(k["in_flight"] > 0 for k in kills)


def fault_storm(phase: Phase) -> None:
    phase.fake.set_storm(Storm(rate=phase.options.storm_rate))
    phase.details["storm_rate"] = phase.options.storm_rate
    phase.traffic.join(phase.traffic.window_s + 60)
    phase.details["storm_outcome"] = _settle(phase, phase.options.settle_s)
    phase.fake.set_storm(None)  # then settle: retries still due go out undisturbed
    phase.details["storm_s"] = round(time.monotonic() - phase.traffic.started_at, 1)


def fault_redeliver(phase: Phase) -> None:
    phase.traffic.join(phase.traffic.window_s + 60)
    phase.details["settled_before_restart"] = _settle(phase, phase.options.settle_s)
    if phase.options.redeliver_after_restart:
        code = phase.daemon.sigterm(timeout_s=phase.options.grace_s + 40)
        phase.details["restart_exit_code"] = code
        phase.restart()
        phase.details["redelivered_after_restart"] = phase.traffic.redeliver_all()
    phase.details["deliveries"] = dict(phase.traffic.deliveries)
    if phase.traffic.unconfirmed:
        phase.details["redeliveries_skipped"] = phase.traffic.unconfirmed[:10]


def fault_sigterm(phase: Phase) -> None:
    moment = phase.rng.uniform(0.3, 0.7) * max(phase.traffic.window_s, 1.0)
    phase.wait_until(moment)
    in_flight = phase.wait_in_flight(timeout_s=5.0)
    started = time.monotonic()
    code = phase.daemon.sigterm(timeout_s=phase.options.grace_s + 40)
    stop_s = round(time.monotonic() - started, 2)
    phase.details["sigterm"] = {"in_flight": in_flight, "exit_code": code, "stop_s": stop_s}
    phase.checks["sigterm_exit_0"] = code == 0
    phase.restart()


def fault_operator(phase: Phase) -> None:
    calls: list[dict[str, Any]] = []
    spread = max(phase.traffic.window_s, 1.0) / max(phase.options.operator_calls, 1)
    for index in range(phase.options.operator_calls):
        phase.wait_until(index * spread)
        args, expected = OPERATOR_COMMANDS[index % len(OPERATOR_COMMANDS)]
        code, seconds, errors = run_cli(phase.daemon.config, *args)
        call: dict[str, Any] = {"command": " ".join(args), "exit": code, "s": round(seconds, 2)}
        if code != expected or "Traceback" in errors:
            call["expected"], call["stderr"] = expected, errors
        calls.append(call)
    codes: dict[str, list[int]] = {}
    for call in calls:
        codes.setdefault(call["command"], []).append(call["exit"])
    phase.details["operator_exit_codes"] = codes
    unexpected = [c for c in calls if "expected" in c]
    if unexpected:
        phase.details["operator_unexpected"] = unexpected[:8]
    phase.checks["operator_exits_as_expected"] = not unexpected


FAULTS: dict[str, Callable[[Phase], None]] = {
    "kill9": fault_kill9, "storm": fault_storm, "redeliver": fault_redeliver,
    "sigterm": fault_sigterm, "operator": fault_operator,
}  # fmt: skip


# --------------------------------------------------------------------------- waiting


def _settle(phase: Phase, timeout_s: float) -> str:
    """Waits until every message is answered and the daemon is idle ("answered"), or it has
    been idle for ``IDLE_S`` with messages unanswered ("idle": nothing more will come), or the
    deadline ("timeout"). Idle: the traffic is done, every update was confirmed, and the
    store holds no unfinished message and no pending delivery."""
    deadline = time.monotonic() + timeout_s
    idle_since: float | None = None
    while (now := time.monotonic()) < deadline:
        idle = (
            phase.traffic.done()
            and phase.traffic.all_confirmed()
            and phase.daemon.backlog() == (0, 0)
        )
        if idle and phase.in_flight() == 0:
            return "answered"
        idle_since = (idle_since or now) if idle else None
        if idle_since is not None and now - idle_since >= IDLE_S:
            return "idle"
        time.sleep(0.2)
    return "timeout"


# --------------------------------------------------------------------------- a phase


def run_phase(name: str, options: Options, work: Path) -> dict[str, Any]:
    rng = random.Random(f"{options.seed}:{name}")  # noqa: S311 - a seeded schedule
    chats = [100 + i for i in range(1, options.chats + 1)]
    work.mkdir(parents=True)
    started = time.monotonic()
    with SoakModel() as model, StormTelegram(seed=rng.randrange(2**32)) as fake:
        api = Endpoints(telegram_origin=fake.api_origin, token=fake.token, model_url=model.base_url)
        daemon = DaemonProcess(work, write_config(work, api, grace_s=options.grace_s))
        traffic = Traffic(
            fake, chats, options.per_chat, options.spacing_s, rng, redeliver=name == "redeliver"
        )
        phase = Phase(name, options, daemon, fake, traffic, rng)
        try:
            phase.details["first_ready_s"] = phase.start()
            traffic.start()
            FAULTS[name](phase)
            traffic.join(traffic.window_s + 60)
            settled = _settle(phase, options.settle_s)
            phase.details["settled"] = settled
            phase.details["backlog_at_end"] = list(daemon.backlog())
            final_code = daemon.sigterm(timeout_s=options.grace_s + 40)
            phase.checks["final_stop_exit_0"] = final_code == 0
        finally:
            traffic.stop()
            daemon.close()
        pushed = traffic.pushed()
        outcome = score(
            pushed,
            {chat: fake.chat_messages(chat) for chat in pushed},
            fake.taken_then_failed,
            traffic.message_ids(),
        )
        if outcome.lost:
            journal = daemon.journal()
            phase.details["lost_in_journal"] = {m: journal.get(m, "never journaled")
                                                for m in outcome.lost[:20]}  # fmt: skip
        if fake.faults:
            phase.details["faults"] = dict(sorted(fake.faults.items()))
        phase.details["model_requests"] = len(model.requests)
    dead = daemon.dead_rows()
    result: dict[str, Any] = {
        **outcome.summary(), "restarts": phase.restarts,
        "wall_s": round(time.monotonic() - started, 1), **phase.details,
        "exit_codes": daemon.exit_codes, "ready_s": daemon.ready_s,
        "dead_outbox_rows": len(dead), "log": daemon.log_findings(), "checks": phase.checks,
    }  # fmt: skip
    if dead:
        result["dead_outbox_samples"] = dead[:8]
    result["ok"] = (
        not outcome.lost
        and not outcome.duplicated
        and not outcome.reordered
        and all(phase.checks.values())
    )
    result["work_dir"] = str(work)
    return result


def _guarded_phase(name: str, options: Options, work: Path) -> dict[str, Any]:
    try:
        return run_phase(name, options, work / name)
    except (RuntimeError, OSError) as exc:  # the phase could not run: a failure, reported
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}


def run_soak(options: Options, work: Path, *, parallel: bool = False) -> dict[str, Any]:
    """Every phase of ``options``; with ``parallel`` all at once (each has its own daemon,
    fakes and state dir), which is quicker and loads the machine harder."""
    if parallel:
        with ThreadPoolExecutor(max_workers=len(options.phases)) as pool:
            futures = {n: pool.submit(_guarded_phase, n, options, work) for n in options.phases}
            phases = {name: future.result() for name, future in futures.items()}
    else:
        phases = {name: _guarded_phase(name, options, work) for name in options.phases}
    return {
        "bench": "soak", "seed": options.seed, "chats": options.chats,
        "per_chat": options.per_chat, "phases": phases,
        "ok": all(phase.get("ok") for phase in phases.values()),
    }  # fmt: skip


def _interrupted(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--chats", type=int)
    parser.add_argument("--per-chat", type=int)
    parser.add_argument("--phases", help=f"comma-separated, of {','.join(PHASES)}")
    parser.add_argument("--short", action="store_true", help="3 chats x 3, one kill, brief")
    parser.add_argument(
        "--min-uptime-s",
        type=float,
        help="kill9: seconds the daemon runs after READY before the next kill (default 3)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the state dirs and logs")
    parser.add_argument("--parallel", action="store_true", help="run the phases at once")
    args = parser.parse_args()
    overrides: dict[str, Any] = {"seed": args.seed}
    if args.chats is not None:
        overrides["chats"] = args.chats
    if args.per_chat is not None:
        overrides["per_chat"] = args.per_chat
    if args.min_uptime_s is not None:
        overrides["min_uptime_s"] = args.min_uptime_s
    if args.phases:
        chosen = tuple(p.strip() for p in args.phases.split(",") if p.strip())
        if unknown := [p for p in chosen if p not in PHASES]:
            parser.error(f"unknown phase(s): {', '.join(unknown)}")
        overrides["phases"] = chosen
    options = Options.short(**overrides) if args.short else Options(**overrides)
    signal.signal(signal.SIGTERM, _interrupted)  # a stopped soak still stops its daemons
    tmp = Path(tempfile.mkdtemp(prefix="soak-"))
    try:
        result = run_soak(options, tmp, parallel=args.parallel)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(result))
    sys.exit(0 if result["ok"] else 1)


if __name__ == "__main__":
    main()
