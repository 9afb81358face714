"""``status``, ``conversations`` (``--messages``: the newest journaled messages' ids),
``trace``, ``users`` and ``audit``: what the daemon and its store say (design §13)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from bot.approvals.views import (
    RunApprovals,
    run_json,
    runs_lines,
    trace_approval,
    turn_approvals,
)
from bot.cli.operator.mutes import mute_json, mute_lines
from bot.cli.operator.output import print_json, say, show
from bot.cli.operator.readyz import Readiness, fetch_readiness, readiness_json
from bot.cli.operator.runner import EXIT_FAILED, opened_store
from bot.cli.options import CommandFailed
from bot.config.settings import Settings
from bot.exit_codes import EXIT_OK
from bot.hub import ALL_CHANNELS, pause_setting
from bot.messages import utc_now
from bot.operator.labels import (
    AUDIT_HEADERS,
    CONVERSATION_HEADERS,
    REPLICA_HEADERS,
    USER_HEADERS,
    JsonObject,
    audit_cells,
    audit_json,
    conversation_cells,
    conversation_json,
    iso,
    replica_cells,
    replica_json,
    table,
    user_cells,
    user_json,
    when,
)
from bot.operator.trace import (
    ReferenceTrace,
    message_json,
    message_table,
    reference_json,
    reference_text,
    trace_reference,
)
from bot.ports import Store
from bot.ports.activity import journal_window_of
from bot.ports.mutes import Mute, mutes_of
from bot.ports.push import push_kind
from bot.ports.schedules import ScheduleCounts, schedules_of
from bot.push.trace import trace_push
from bot.records import OutboxState, Replica
from bot.registry import IMPORT_PATHS, EdgeKind
from bot.schedules.views import trace_schedule

# --------------------------------------------------------------------------- status


PENDING_LOOKED_AT = 1000


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreFacts:
    conversations: int
    outbox: dict[OutboxState, int]
    pairing_requests: int
    paused: tuple[str, ...]
    replicas: tuple[Replica, ...]
    """Live daemons on this store (heartbeat younger than ``daemon.replica_expiry_s``)."""
    chats_held: dict[str, int]
    """How many chats each live replica holds (0 alone on SQLite, where all are its own)."""
    schedules: ScheduleCounts | None = None
    """Active schedules and the next firing (design §19); ``None``: the store keeps none."""
    pushes_pending: int = 0
    """Pending outbox rows that deliver pushes (and schedule firings), of the first
    ``PENDING_LOOKED_AT`` pending rows."""
    mutes: tuple[Mute, ...] | None = None
    """Muted conversations in force (design §22); ``None``: the store keeps none."""

    def to_json(self) -> JsonObject:
        return {
            "conversations": self.conversations,
            "outbox": {str(state): count for state, count in self.outbox.items()},
            "pairing_requests": self.pairing_requests,
            "paused": list(self.paused),
            "pushes_pending": self.pushes_pending,
            "schedules": None
            if self.schedules is None
            else {"active": self.schedules.active, "next": iso(self.schedules.next_fire_at)},
            "mutes": None if self.mutes is None else [mute_json(mute) for mute in self.mutes],
        }


async def status(args: argparse.Namespace, settings: Settings) -> int:
    readiness = await fetch_readiness(settings.http)
    facts: StoreFacts | str
    try:
        async with opened_store(settings) as store:
            facts = await _store_facts(store, settings)
    except CommandFailed as exc:
        facts = str(exc)
    if args.json:
        store_json = {"error": facts} if isinstance(facts, str) else facts.to_json()
        replicas = (
            []
            if isinstance(facts, str)
            else [replica_json(r, facts.chats_held.get(r.id, 0)) for r in facts.replicas]
        )
        print_json(
            {
                "ready": readiness.ready,
                "daemon": readiness_json(readiness),
                "replicas": replicas,
                "store": {
                    "backend": str(settings.store.backend),
                    "state_dir": str(settings.state_dir),
                    **store_json,
                },
            }
        )
    else:
        _print_status(readiness, settings, facts)
    return EXIT_OK if readiness.ready else EXIT_FAILED


async def _store_facts(store: Store, settings: Settings) -> StoreFacts:
    pairings = await store.access.pending_pairings(utc_now())
    replicas = tuple(await store.replicas.live(utc_now(), settings.daemon.replica_expiry_s))
    return StoreFacts(
        conversations=await store.conversations.count(),
        outbox=await store.outbox.counts(),
        pairing_requests=len(pairings),
        paused=await _paused(store, settings),
        replicas=replicas,
        chats_held={r.id: await store.leases.held(r.id) for r in replicas},
        schedules=None if (table := schedules_of(store)) is None else await table.counts(),
        mutes=None if (muted := mutes_of(store)) is None else tuple(await muted.active(utc_now())),
        pushes_pending=sum(
            1
            for row in await store.outbox.listing(OutboxState.PENDING, limit=PENDING_LOOKED_AT)
            if push_kind(row.item) is not None
        ),
    )


async def _paused(store: Store, settings: Settings) -> tuple[str, ...]:
    """Channels with a persisted ``/pause`` (``*`` is every channel), read from the settings
    rows ``ChannelHub`` writes: ``paused.<channel>``."""
    names = {*IMPORT_PATHS[EdgeKind.CHANNEL], *settings.channels.enabled(), ALL_CHANNELS}
    return tuple([name for name in sorted(names) if await store.settings.get(pause_setting(name))])


def _print_status(readiness: Readiness, settings: Settings, facts: StoreFacts | str) -> None:
    if readiness.ready:
        daemon = f"ready ({readiness.url})"
    elif readiness.reachable:
        daemon = f"NOT READY ({readiness.url})"
    else:
        daemon = "NOT RUNNING or not reachable"
    lines = [("daemon", daemon), *(("", f"- {reason}") for reason in readiness.reasons)]
    lines.append(("state_dir", str(settings.state_dir)))
    where = "" if settings.store.url is None else f" ({settings.store.redacted_url()})"
    lines.append(("backend", f"{settings.store.backend}{where}"))
    if isinstance(facts, str):
        lines.append(("store", facts))
    else:
        counts = facts.outbox
        paused = ["all channels" if name == ALL_CHANNELS else name for name in facts.paused]
        lines += [
            ("conversations", f"{facts.conversations} active"),
            ("outbox", ", ".join(f"{counts[state]} {state}" for state in OutboxState)),
            ("pushes", f"{facts.pushes_pending} pending row(s)"),
            ("pairing", f"{facts.pairing_requests} pending request(s)"),
            ("paused", ", ".join(paused) or "none"),
            ("replicas", f"{len(facts.replicas)} live"),
        ]
        if facts.schedules is not None:
            upcoming = facts.schedules.next_fire_at
            later = "" if upcoming is None else f", next at {when(upcoming)} UTC"
            lines.append(("schedules", f"{facts.schedules.active} active{later}"))
        if facts.mutes is not None:
            lines += mute_lines(facts.mutes)
    for name, value in lines:
        say(f"{name:<14} {value}")
    if not isinstance(facts, str) and facts.replicas:
        cells = [replica_cells(r, facts.chats_held.get(r.id, 0)) for r in facts.replicas]
        show(table(REPLICA_HEADERS, cells, indent="  "))


# --------------------------------------------------------------------------- conversations


async def conversations(args: argparse.Namespace, settings: Settings) -> int:
    if args.messages:
        return await _messages(args, settings)
    async with opened_store(settings) as store:
        found = await store.conversations.recent(channel=args.channel, limit=args.limit)
    if args.json:
        print_json([conversation_json(conversation) for conversation in found])
    elif not found:
        say("no active conversations")
    else:
        show(table(CONVERSATION_HEADERS, [conversation_cells(c) for c in found]))
    return EXIT_OK


async def _messages(args: argparse.Namespace, settings: Settings) -> int:
    """The newest journaled messages with their ids (to ``trace``), newest first."""
    async with opened_store(settings) as store:
        window = journal_window_of(store)
        if window is None:
            raise CommandFailed("this store keeps no journal to list", EXIT_FAILED)
        found = await window.recent(limit=args.limit, channel=args.channel)
    if args.json:
        print_json([message_json(entry) for entry in found])
    elif not found:
        say("no journaled messages" + (f" on {args.channel}" if args.channel else ""))
    else:
        show(message_table(found))
    return EXIT_OK


# --------------------------------------------------------------------------- trace


async def trace(args: argparse.Namespace, settings: Settings) -> int:
    """Any id a user is shown: a message id, a ``ref`` (correlation id), a push delivery id,
    ``schedule-ID``, an approval's id or ``approval-RUN``."""
    ref = args.message_id
    config = settings.agent.approvals
    async with opened_store(settings) as store:
        found = await trace_reference(store, ref, args.channel)
        paused = {} if found is None else await _approvals(store, found)
        other = (
            None
            if found
            else await trace_schedule(store, ref)
            or await trace_push(store, ref)
            or await trace_approval(store, config, ref)
        )
    if other is not None:
        if args.json:
            print_json(other[0])
        else:
            show(other[1])
        return EXIT_OK
    if found is None:
        where = f" on {args.channel}" if args.channel else ""
        days = settings.daemon.journal_retention_days
        raise CommandFailed(
            f"no journal entry for message {ref}{where}: no message id, ref (correlation id),"
            f" push delivery id, schedule-ID or approval id matches (the journal keeps messages"
            f" for {days} days; `switchboard conversations --messages` lists the recent ids)",
            EXIT_FAILED,
        )
    if args.json:
        more: dict[int, JsonObject] = {
            e: {"approvals": [run_json(r, config) for r in runs]} for e, runs in paused.items()
        }
        print_json(reference_json(found, more))
    else:
        show(reference_text(found, {e: runs_lines(runs, config) for e, runs in paused.items()}))
    return EXIT_OK


async def _approvals(store: Store, found: ReferenceTrace) -> dict[int, list[RunApprovals]]:
    """The approval runs each entry's turn paused for, by journal entry id."""
    return {
        trace.entry.id: await turn_approvals(store, trace.correlations) for trace in found.traces
    }


# --------------------------------------------------------------------------- users and audit


async def users(args: argparse.Namespace, settings: Settings) -> int:
    """Users an admin or the operator let in or blocked (``/allow``, ``/deny``, approvals)."""
    async with opened_store(settings) as store:
        found = await store.access.users(args.channel)
    if args.json:
        print_json([user_json(user) for user in found])
    elif not found:
        say("no users allowed or denied yet")
    else:
        show(table(USER_HEADERS, [user_cells(user) for user in found]))
    return EXIT_OK


async def audit(args: argparse.Namespace, settings: Settings) -> int:
    """The latest admin actions, newest first: who did what, from chat or from this CLI."""
    async with opened_store(settings) as store:
        entries = await store.audit.recent(args.limit)
    if args.json:
        print_json([audit_json(entry) for entry in entries])
    elif not entries:
        say("no admin actions recorded")
    else:
        show(table(AUDIT_HEADERS, [audit_cells(entry) for entry in entries]))
    return EXIT_OK
