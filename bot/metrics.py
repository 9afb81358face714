"""Metrics and the structured log lines every handled or dropped message produces (design §10, §13).

Metrics use ``prometheus_client`` on a per-daemon registry, so tests and several daemons in
one process never share counters.
"""

from __future__ import annotations

import logging
from enum import StrEnum
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector

from bot.messages import InboundMessage

logger = logging.getLogger(__name__)


class DropReason(StrEnum):
    """Machine-readable reasons a message got no agent turn (design §10)."""

    NOT_ALLOWED = "not_allowed"
    NOT_ADDRESSED = "not_addressed"
    PAUSED = "paused"
    DUPLICATE = "duplicate"
    QUEUE_FULL = "queue_full"
    BUSY = "busy"
    FROM_BOT = "from_bot"
    HEARD = "heard"
    """Not addressed to the bot, and kept as context (``group_policy: listen``)."""
    TOO_LONG = "too_long"
    """Longer than ``conversations.max_inbound_chars``; its sender was told (design §10)."""


LATENCY_BUCKETS: Final = (0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0)
"""Seconds, up to ``agent.run_timeout_s``'s default: a p95 over 10 s can be told from one
over 5 minutes (the library's default buckets stop at 10 s)."""


class ReplicaMetrics:
    """What a replica of a shared store reports about itself and its chats (design §11)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.info = Gauge(
            "switchboard_replica_info",
            "1 for this daemon: its replica id and store backend (design §11).",
            ["replica", "backend"],
            registry=registry,
        )
        self.heartbeat_age = Gauge(
            "switchboard_replica_heartbeat_age_seconds",
            "Seconds since each replica registered on the store last heartbeat, as this replica"
            " reads the store (a crashed peer's grows; one that stopped cleanly is gone).",
            ["replica"],
            registry=registry,
        )
        self.leases_held = Gauge(
            "switchboard_chat_leases_held",
            "Chats this replica holds on a shared store (it routes, runs and sends them).",
            registry=registry,
        )
        self.chats_rebalanced = Counter(
            "switchboard_chats_rebalanced",
            "Idle chats this replica handed to a less loaded replica (design §11).",
            registry=registry,
        )
        self.fenced = Counter(
            "switchboard_fenced",
            "Chats this replica found it had lost to another (a stall past the lease expiry),"
            " by what found it out: send, progress, commit, claim or verify (design §11).",
            ["what"],
            registry=registry,
        )


class ScheduleMetrics:
    """Schedules (design §19 "Schedules"): firings by outcome, and how many are active."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.firings = Counter(
            "switchboard_schedule_firings",
            "Schedule firings by outcome (delivered, late, skipped, failed).",
            ["outcome"],
            registry=registry,
        )
        self.active = Gauge(
            "switchboard_schedules_active",
            "Active schedules on the store, as this daemon's schedules loop last counted.",
            registry=registry,
        )


class PushMetrics:
    """Pushes (design §19): requests to the HTTP push API by kind and outcome (``accepted``,
    ``repeated`` for an Idempotency-Key seen before, or why one was refused), and how the
    outbox rows that deliver pushes ended, counted by the replica that finished them."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.schedules = ScheduleMetrics(registry)
        """Schedule firings, which push too (kept here: ``Counters`` is full)."""
        self.requests = Counter(
            "switchboard_pushes",
            "Push API requests by kind (text, file, run_agent) and outcome (accepted, repeated,"
            " unauthorized, rate_limited, invalid, too_large, not_found, conflict, unavailable).",
            ["kind", "outcome"],
            registry=registry,
        )
        self.deliveries = Counter(
            "switchboard_push_deliveries",
            "Outbox rows delivering a push (text, file, or a run_agent answer) that this"
            " replica finished, by kind and outcome (sent, dead).",
            ["kind", "outcome"],
            registry=registry,
        )

    def count(self, kind: str, outcome: str) -> None:
        self.requests.labels(kind=kind, outcome=outcome).inc()

    def delivered(self, kind: str, outcome: str) -> None:
        self.deliveries.labels(kind=kind, outcome=outcome).inc()


class Counters:
    """The daemon's Prometheus metrics."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        """``process_start_time_seconds`` (a restart), CPU, memory and open files."""
        self.inbound_total = Counter(
            "switchboard_inbound_messages",
            "Inbound messages by channel and outcome.",
            ["channel", "outcome"],
            registry=self.registry,
        )
        self._inbound: dict[tuple[str, str], Counter] = {}
        self.runs_active = Gauge(
            "switchboard_runs_active", "Agent runs in progress.", registry=self.registry
        )
        self.run_seconds = Histogram(
            "switchboard_run_duration_seconds",
            "Agent run duration by outcome.",
            ["outcome"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.first_reply_seconds = Histogram(
            "switchboard_time_to_first_reply_seconds",
            "Time from receiving a message to the first visible reply.",
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.send_errors = Counter(
            "switchboard_send_errors",
            "Failed platform operations by channel and error kind.",
            ["channel", "kind"],
            registry=self.registry,
        )

        self.outbox_rows = Gauge(
            "switchboard_outbox_rows",
            "Outbox rows by state (pending rows wait to be sent; dead rows need an operator).",
            ["state"],
            registry=self.registry,
        )
        self.channel_up = Gauge(
            "switchboard_channel_up",
            "1 while the channel is connected, 0 otherwise.",
            ["channel"],
            registry=self.registry,
        )
        self.replicas = ReplicaMetrics(self.registry)
        self.pushes = PushMetrics(self.registry)
        self.reconnects = Counter(
            "switchboard_channel_reconnects",
            "Times a channel lost its connection and reconnected.",
            ["channel"],
            registry=self.registry,
        )

    def inbound(self, channel: str, outcome: str) -> None:
        """Counted for every message: the labelled child is looked up once per pair."""
        child = self._inbound.get((channel, outcome))
        if child is None:
            child = self._inbound[(channel, outcome)] = self.inbound_total.labels(
                channel=channel, outcome=outcome
            )
        child.inc()


def log_drop(message: InboundMessage, reason: DropReason) -> None:
    """One line per dropped message; never its text (design §10)."""
    logger.info(
        "dropped channel=%s chat=%s message=%s user=%s reason=%s",
        message.channel,
        message.chat_id,
        message.message_id,
        message.sender.id,
        reason,
    )
