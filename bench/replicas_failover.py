"""The failover measurement of ``bench/replicas.py``: kill -9 the busiest of three replicas.

Three daemons share a fresh PostgreSQL schema with ``daemon.replica_expiry_s`` = ``expiry_s``
behind the fake Telegram's balancer, under the closed loop of ``bench/replicas_load.py`` (after
the same warm-up). Once the chats have had about three answers each, the replica holding the
most chats (read from ``chat_leases``) is killed with -9 right after its heartbeat moved (the
worst case: its leases lapse a whole expiry after the kill; a replica killed before its first
beat, which comes an interval after it is ready, lapses sooner), and the balancer's rotation
loses it. The failover time is from the kill until each chat that replica held, and that still
had questions to ask, has got an answer recorded after the kill: the question in flight (re-run
by the replica that takes the chat over) or one asked after it (journaled by a live replica and
left for the chat's holder until the lease lapses). Then the load runs to its end and every
question must have been answered exactly once.

Also reported: how old the victim's heartbeat was at the kill (a lease lapses ``expiry_s``
after the last heartbeat, not after the kill), when the survivors' logs say they took chats
over, and the worst latency the other chats saw after the kill.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from datetime import datetime
from typing import Any

from bench.replicas_fleet import Backend, Fleet, Replica, Run, log_findings
from bench.replicas_load import ClosedLoop, Lost, chat_of, score, summary
from bench.replicas_store import HeartbeatWatch, fresh_schema, leases, replica_ids
from bot.fleet.replica import heartbeat_interval
from tests.fakes.telegram_api import FakeTelegram

SLACK_S = 2.0
"""The target: failover within the expiry plus this."""
ROUNDS_BEFORE_KILL = 3
FRESH_S = 0.3
"""The victim is killed once its heartbeat is younger than this."""
_TOOK_OVER = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) .*took over (\d+) chat\(s\) and (\d+) unfinished"
)


def failover(run: Run) -> dict[str, Any]:
    chats, messages, expiry_s = run.chats, run.messages, run.expiry_s
    with fresh_schema(run.store_url, "bench_failover") as schema, FakeTelegram() as fake:
        backend = Backend(url=run.store_url, schema=schema, expiry_s=expiry_s)
        work = run.work / "failover"
        with Fleet(work, "fo", 3, fake=fake, model_url=run.model_url, backend=backend) as fleet:
            result: dict[str, Any] = {"expiry_s": expiry_s, "target_s": expiry_s + SLACK_S,
                                      "ready_s": fleet.ready_s}  # fmt: skip
            try:
                result |= _measure(fleet, fake, backend, chats, messages)
            except Lost as exc:
                result["error"] = str(exc)
            fleet.stop()
            result["exit_codes"] = fleet.exit_codes()
            result["score"] = score(fake, chats, 0, messages)
            result["logs"] = log_findings(fleet.replicas)
    return result


def _measure(
    fleet: Fleet, fake: FakeTelegram, backend: Backend, chats: list[int], messages: int,
) -> dict[str, Any]:  # fmt: skip
    assert backend.url is not None
    assert backend.schema is not None
    assert backend.expiry_s is not None
    url, schema, expiry = backend.url, backend.schema, backend.expiry_s
    warm = ClosedLoop(fake, chats, 0, 0)  # as for throughput: the first turns are slow
    warm.start()
    warm.run(stall_s=60, deadline=time.monotonic() + 120)
    load = ClosedLoop(fake, chats, 1, messages)
    before = len(chats) * min(ROUNDS_BEFORE_KILL, messages - 1)
    load.start()
    load.run(stall_s=60, deadline=time.monotonic() + 120 + 2 * messages,
             until=lambda: len(load.answers) >= before)  # fmt: skip
    victim, (owner, _) = _busiest(fleet, url, schema)
    with HeartbeatWatch(url, schema, owner) as watch:
        # The worst case: the lease lapses a whole expiry after a kill just after a beat.
        give_up = time.monotonic() + heartbeat_interval(expiry) + 5.0
        load.run(stall_s=60, deadline=give_up + 60,
                 until=lambda: watch.fresh(FRESH_S) or time.monotonic() > give_up)  # fmt: skip
        victim_chats = {chat for chat, holder in leases(url, schema).items() if holder == owner}
        in_flight = load.pending(victim_chats)
        age = watch.age()
        wall = time.time()
        killed_at = victim.kill9()
    active = {chat_of(marker) for marker in in_flight}
    fleet.balance()  # the balancer's health check takes the dead replica out of the rotation
    load.run(stall_s=expiry + 60, deadline=killed_at + expiry + 120 + 2 * messages)
    after = {
        chat: min(a.at for a in load.answers if a.chat == chat and a.at >= killed_at)
        for chat in active
    }
    per_chat = sorted(round(at - killed_at, 2) for at in after.values())
    slowest = max(after, key=lambda chat: after[chat], default=None)
    seconds = max(per_chat, default=0.0)
    others = [
        a.at - load.pushed[a.marker]
        for a in load.answers
        if a.chat not in victim_chats and a.at >= killed_at
    ]
    return {
        "victim": victim.name, "victim_chats": len(victim_chats), "in_flight": len(in_flight),
        "answers_before_kill": len([a for a in load.answers if a.at < killed_at]),
        "heartbeat_age_at_kill_s": None if age is None else round(age, 2),
        "failover_s": round(seconds, 2), "met": seconds <= expiry + SLACK_S,
        "per_chat_s": per_chat,
        "takeovers_logged": _takeovers(fleet.replicas, wall),
        "slowest_chat": None if slowest is None else _timeline(
            fake, load, slowest, killed_at, after[slowest]),
        "others_after_kill": summary(others),
        "slowest_answers": [
            f"{a.marker} asked at {load.pushed[a.marker] - killed_at:+.2f}s:"
            f" {a.at - load.pushed[a.marker]:.2f}s"
            for a in sorted(load.answers, key=lambda a: load.pushed[a.marker] - a.at)[:5]
        ],
        "whole_run": summary(load.latencies(), max(a.at for a in load.answers) - min(
            load.pushed.values())),
    }  # fmt: skip


def _timeline(
    fake: FakeTelegram, load: ClosedLoop, chat: int, since: float, until: float
) -> list[str]:
    """What happened in ``chat`` from the kill to its first answer after it: the questions
    asked and the bot's calls, as ``+seconds what``."""
    events = [(at, f"asked {marker}") for marker, at in load.pushed.items()
              if marker.startswith(f"q{chat}-") and since <= at <= until]  # fmt: skip
    for call in fake.calls():
        if since <= call.at <= until and call.params.get("chat_id") == str(chat):
            text = str(call.params.get("text") or "")
            events.append((call.at, f"{call.method} {text[:48]!r}" if text else call.method))
    return [f"+{at - since:.2f}s {what}" for at, what in sorted(events)]


def _busiest(fleet: Fleet, url: str, schema: str) -> tuple[Replica, tuple[str, int]]:
    """The running replica holding the most chats, with (its id, how many)."""
    ids = replica_ids(url, schema)
    by_pid = fleet.by_pid()
    held = Counter(leases(url, schema).values())
    running = [(rid, held[rid]) for pid, rid in ids.items() if pid in by_pid]
    if not running:
        raise RuntimeError(f"no running replica holds a chat: {held}, replicas {ids}")
    rid, count = max(running, key=lambda item: item[1])
    pid = next(p for p, r in ids.items() if r == rid)
    return by_pid[pid], (rid, count)


def _takeovers(replicas: list[Replica], since: float) -> list[dict[str, Any]]:
    """The survivors' "took over" log lines after ``since`` (wall clock): seconds after it."""
    found: list[dict[str, Any]] = []
    for replica in replicas:
        if not replica.log.exists():
            continue
        for line in replica.log.read_text(errors="replace").splitlines():
            match = _TOOK_OVER.match(line)
            if match is None:
                continue
            at = datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()  # noqa: DTZ007 - logging's local time
            if at >= since:
                chats, messages = int(match.group(2)), int(match.group(3))
                found.append({"replica": replica.name, "after_s": round(at - since, 2),
                              "chats": chats, "messages": messages})  # fmt: skip
    return sorted(found, key=lambda item: float(item["after_s"]))
