"""Partitions and stalls of one replica of three: lost, duplicated and reordered answers.

Three real ``python -m bot run -c CONFIG`` daemons (what ``switchboard run`` runs) share one
fresh PostgreSQL schema, each in a network namespace of its own (``bench/netns.py``): a
separate host as far as the network goes, joined to this machine by two veth pairs on a private
/24 this script picks and removes again, one pair for PostgreSQL only and one for everything
else. PostgreSQL is not reconfigured: a small TCP forwarder on the host end of each store pair
relays to the server's loopback address; the fake Telegram (webhook mode, with its load
balancer) and the fake model (``bench/replicas_load.py``'s, which names the questions it
answers) run on threads of this process on 127.0.0.1 and are reached through forwarders on the
host ends of the other pairs. The balancer checks health as a real one would: every 0.25 s it
asks each replica's ``/readyz`` (1 s timeout) and rotates only over those that answer ready.

One fleet runs two phases, each on chats of its own (``--chats`` chats, closed loop, a warm-up
question and ``--messages`` more each, as in ``bench/replicas.py``). Once each chat has had an
answer, the replica holding the most of the phase's chats is picked; as soon as it has a turn
running (its ``running`` journal entries), the fault starts:

1. partition: the replica's store link goes down (packets to PostgreSQL dropped silently, no
   reset; Telegram and the model stay reachable) for ``--fault-s`` (default twice
   ``daemon.replica_expiry_s``), then comes back up;
2. stall: the replica gets SIGSTOP for ``--fault-s`` with turns in flight, then SIGCONT.

The load goes on meanwhile and runs to its end afterwards; each phase then waits (bounded) until
the store has nothing unfinished for its chats and the chats have been quiet for a while. When
both phases are over, the fleet stops and each phase's chats are scored from what the fake
Telegram shows: every question answered exactly once, in order (``score``). A placeholder left
with the cursor after its stream had reached the whole answer, beside the final answer, is a
duplicate as users see it (``shown_twice``; ``duplicated_as_seen`` adds them to the duplicated
final answers). There is no at-least-once ambiguity to allow for: no send fails here (a 5xx
after Telegram took a message, the one case where a resend may duplicate by design, is not
injected).

Prints one JSON line with the figures per phase and what was left behind (namespaces, links,
routes, processes, the schema: all removed on exit, also on Ctrl-C, SIGTERM or failure); exits
1 unless every phase has 0 lost, 0 duplicated as seen and 0 reordered (130 when interrupted). All
traffic stays on this machine; every wait is bounded. ``--short`` is the suite's variant
(``tests/bench/test_partition.py``). Needs root (namespaces) and PostgreSQL.
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
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import partition_watch as watch  # noqa: E402
from bench.netns import Forwarder, Network, problem  # noqa: E402
from bench.partition_fleet import (  # noqa: E402
    HealthBalancer,
    NsReplica,
    World,
    fleet,
    loopback_port,
    port_of,
    stop_all,
    write_config,
)
from bench.replicas_fleet import log_findings  # noqa: E402
from bench.replicas_load import (  # noqa: E402
    ClosedLoop,
    Lost,
    PromptModel,
    score,
)
from bench.replicas_store import check_server, fresh_schema, leases, replica_ids  # noqa: E402
from tests.fakes.telegram_api import FakeTelegram  # noqa: E402

PHASES = ("partition", "stall")
DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"
EXIT_INTERRUPTED = 130


@dataclass(frozen=True, slots=True, kw_only=True)
class Options:
    chats: int = 12
    messages: int = 6
    model_latency_s: float = 1.0
    expiry_s: float = 5.0
    fault_s: float | None = None
    """How long the fault lasts; None: twice the expiry."""
    grace_s: float = 10.0
    settle_s: float = 60.0
    store_url: str = DEFAULT_URL
    phases: tuple[str, ...] = PHASES

    @classmethod
    def short(cls, **changes: Any) -> Options:
        """The suite's variant: 4 chats, 3 messages each, a 2 s expiry."""
        base = cls(chats=4, messages=3, model_latency_s=0.6, expiry_s=2.0, grace_s=5.0,
                   settle_s=20.0)  # fmt: skip
        return replace(base, **changes)

    @property
    def fault(self) -> float:
        return self.fault_s if self.fault_s is not None else 2 * self.expiry_s


# --------------------------------------------------------------------------- the run


@dataclass(slots=True)
class Cleanup:
    """What the run left behind, checked after everything was closed."""

    network: Network | None = None
    schema: str | None = None
    replicas: list[NsReplica] = field(default_factory=list)

    def report(self, store_url: str) -> dict[str, Any]:
        left = self.network.leftovers() if self.network is not None else []
        running = [r.name for r in self.replicas if r.alive()]
        tag = self.network.tag if self.network is not None else None
        schema_left = self.schema is not None and watch.schema_exists(store_url, self.schema)
        return {"tag": tag, "network_left": left, "processes_left": running,
                "schema_left": schema_left, "clean": not left and not running}  # fmt: skip


def run_partition(options: Options, work: Path, cleanup: Cleanup) -> dict[str, Any]:
    """Both phases on one fleet; the figures per phase (scored once the fleet stopped)."""
    check_server(options.store_url)
    results: dict[str, Any] = {}
    target = loopback_port(options.store_url)
    with contextlib.ExitStack() as stack:
        net = stack.enter_context(Network(3))
        cleanup.network = net
        model = stack.enter_context(PromptModel(options.model_latency_s))
        fake = stack.enter_context(FakeTelegram())
        schema = stack.enter_context(fresh_schema(options.store_url, "bench_partition"))
        cleanup.schema = schema
        world = World(fake=fake, telegram_port=port_of(fake.api_origin),
                      model_port=port_of(model.base_url), store_url=options.store_url,
                      schema=schema)  # fmt: skip
        forwarder = stack.enter_context(Forwarder())
        for host in net.hosts:
            forwarder.add(host.services.host_addr, world.telegram_port, world.telegram_port)
            forwarder.add(host.services.host_addr, world.model_port, world.model_port)
            forwarder.add(host.store.host_addr, target, target)
        replicas = [write_config(work, f"part-{i}", h, world, expiry_s=options.expiry_s,
                                 grace_s=options.grace_s)
                    for i, h in enumerate(net.hosts)]  # fmt: skip
        cleanup.replicas = replicas
        started = time.monotonic()
        stack.enter_context(fleet(replicas))
        results["ready_s"] = round(time.monotonic() - started, 2)
        balancer = stack.enter_context(HealthBalancer(fake, replicas))
        chat_sets: dict[str, list[int]] = {}
        for number, name in enumerate(options.phases):
            chats = [100 * (number + 1) + i for i in range(1, options.chats + 1)]
            chat_sets[name] = chats
            served = model.requests_served
            try:
                results[name] = _phase(
                    name, chats, world=world, net=net, replicas=replicas, options=options
                )
            except Lost as exc:
                results[name] = {"error": str(exc)}
            results[name]["model_requests"] = model.requests_served - served
        results["balancer_changes"] = len(balancer.changes)
        stop_all(replicas)
        results["exit_codes"] = {r.name: list(r.exit_codes) for r in replicas}
        for name, chats in chat_sets.items():
            results[name]["score"] = score(fake, chats, 0, options.messages)
            results[name]["left_placeholder_samples"] = watch.left_placeholders(fake, chats)
            results[name]["shown_twice"] = twice = watch.shown_twice(fake, chats)
            since = results[name].pop("started_at", None)
            if since is not None and results[name]["left_placeholder_samples"]:
                results[name]["left_placeholder_calls"] = watch.history(fake, chats, since)
            figures = results[name]["score"]
            results[name]["duplicated_as_seen"] = int(figures["duplicated"]) + len(twice)
        results["logs"] = log_findings(list(replicas))
    return results


def _phase(  # noqa: PLR0913 - what one phase works on
    name: str, chats: list[int], *, world: World, net: Network, replicas: list[NsReplica],
    options: Options,
) -> dict[str, Any]:  # fmt: skip
    fake, url, schema = world.fake, world.store_url, world.schema
    warm = ClosedLoop(fake, chats, 0, 0)
    warm.start()
    warm.run(stall_s=60, deadline=time.monotonic() + 120)
    load = ClosedLoop(fake, chats, 1, options.messages)
    load.start()
    deadline = time.monotonic() + 120 + 4 * options.messages + options.fault
    load.run(stall_s=60, deadline=deadline, until=lambda: len(load.answers) >= len(chats))
    victim, owner = _busiest(replicas, url, schema, chats)
    held = sorted(c for c, o in leases(url, schema).items() if o == owner and c in chats)
    give_up = time.monotonic() + 20
    running: list[str] = []

    def turning() -> bool:
        running[:] = watch.running(url, schema, owner, chats)
        return bool(running) or time.monotonic() > give_up

    load.run(stall_s=60, deadline=deadline, until=turning)
    at = time.monotonic()
    if name == "partition":
        net.cut(victim.host)
    else:
        victim.send(signal.SIGSTOP)
    try:
        load.run(stall_s=options.fault + 60, deadline=deadline,
                 until=lambda: time.monotonic() >= at + options.fault)  # fmt: skip
        time.sleep(max(0.0, at + options.fault - time.monotonic()))  # the load may end first
    finally:
        if name == "partition":
            net.heal(victim.host)
        else:
            victim.send(signal.SIGCONT)
    healed = time.monotonic()
    answered_during = len([a for a in load.answers if at <= a.at < healed])
    error: str | None = None
    try:
        load.run(stall_s=options.expiry_s + 60, deadline=deadline)
    except Lost as exc:
        error = str(exc)
    settled = watch.settle(fake, url, schema, chats, time.monotonic() + options.settle_s)
    after = leases(url, schema)
    found: dict[str, Any] = {
        "victim": victim.name, "victim_chats": len(held), "turns_running_at_fault": running,
        "fault_s": round(healed - at, 2), "answers_during_fault": answered_during,
        "victim_chats_now_held_by": _names(replicas, url, schema,
                                           sorted({after[c] for c in held if c in after})),
        "settled": settled, "seconds": round(time.monotonic() - at, 1),
        "started_at": at,
    }  # fmt: skip
    if error is not None:
        found["error"] = error
    return found


def _busiest(
    replicas: list[NsReplica], url: str, schema: str, chats: list[int]
) -> tuple[NsReplica, str]:
    """The running replica holding the most of ``chats``, and its replica id."""
    ids = replica_ids(url, schema)
    by_pid = {r.pid: r for r in replicas if r.pid is not None}
    held: dict[str, int] = {}
    for chat, owner in leases(url, schema).items():
        if chat in chats:
            held[owner] = held.get(owner, 0) + 1
    running = [(rid, held.get(rid, 0)) for pid, rid in ids.items() if pid in by_pid]
    if not running:
        raise RuntimeError(f"no running replica registered: {ids}")
    rid = max(running, key=lambda item: item[1])[0]
    pid = next(p for p, r in ids.items() if r == rid)
    return by_pid[pid], rid


def _names(replicas: list[NsReplica], url: str, schema: str, owners: list[str]) -> list[str]:
    by_pid = {r.pid: r.name for r in replicas if r.pid is not None}
    names = {rid: by_pid.get(pid, rid) for pid, rid in replica_ids(url, schema).items()}
    return [names.get(owner, owner) for owner in owners]


def ok(report: dict[str, Any], phases: tuple[str, ...]) -> bool:
    """Every phase ran and has 0 lost / 0 duplicated (as users see them) / 0 reordered."""
    for name in phases:
        found = report.get(name) or {}
        figures = found.get("score") or {}
        if "error" in found or not figures:
            return False
        seen = found.get("duplicated_as_seen", figures["duplicated"])
        if figures["lost"] or seen or figures["reordered_chats"]:
            return False
    return True


# --------------------------------------------------------------------------- main


def _arguments() -> tuple[Options, Path | None]:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--short", action="store_true", help="the suite's short variant")
    parser.add_argument("--chats", type=int)
    parser.add_argument("--messages", type=int, help="per chat")
    parser.add_argument("--model-latency", type=float, metavar="S")
    parser.add_argument("--expiry", type=float, metavar="S", help="daemon.replica_expiry_s")
    parser.add_argument("--fault-s", type=float, metavar="S",
                        help="how long each fault lasts (default: twice the expiry)")  # fmt: skip
    parser.add_argument("--phases", help=f"comma-separated subset of {','.join(PHASES)}")
    parser.add_argument("--store-url")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="keep configs and logs there")
    args = parser.parse_args()
    options = Options.short() if args.short else Options()
    given = {
        "chats": args.chats, "messages": args.messages, "model_latency_s": args.model_latency,
        "expiry_s": args.expiry, "fault_s": args.fault_s, "store_url": args.store_url,
    }  # fmt: skip
    options = replace(options, **{k: v for k, v in given.items() if v is not None})
    if args.phases:
        phases = tuple(p.strip() for p in args.phases.split(",") if p.strip())
        if not phases or set(phases) - set(PHASES):
            parser.error(f"--phases: choose from {','.join(PHASES)}")
        options = replace(options, phases=phases)
    if options.chats < 1 or options.messages < 2 or options.expiry_s <= 0 or options.fault <= 0:
        parser.error("--chats ≥ 1, --messages ≥ 2, --expiry and --fault-s > 0")
    return options, args.keep


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
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


def main() -> int:
    options, keep = _arguments()
    started = time.monotonic()
    report: dict[str, Any] = {
        "bench": "partition", "chats": options.chats, "messages_per_chat": options.messages,
        "model_latency_s": options.model_latency_s, "replica_expiry_s": options.expiry_s,
        "fault_s": options.fault, "cpus": os.cpu_count(),
    }  # fmt: skip
    why = problem()
    if why is not None:
        report |= {"ok": False, "error": f"cannot run: {why}"}
        print(json.dumps(report))
        return 1
    work = keep.resolve() if keep is not None else Path(tempfile.mkdtemp(prefix="sb-partition-"))
    work.mkdir(parents=True, exist_ok=True)
    cleanup = Cleanup()
    interrupted = False
    try:
        with interruptible():
            report |= run_partition(options, work, cleanup)
    except KeyboardInterrupt:
        interrupted = True
    except Exception as exc:  # noqa: BLE001 - reported in the JSON line, exit status 1
        report["error"] = f"{type(exc).__name__}: {exc}"[:2000]
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)
    report["cleanup"] = cleanup.report(options.store_url)
    report["ok"] = passed = ok(report, options.phases) and "error" not in report
    if interrupted:
        report["interrupted"] = True
    report["seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(report))
    return EXIT_INTERRUPTED if interrupted else 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
