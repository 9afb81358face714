"""Approval metrics (design §24): requests asked, decisions by outcome, time to decision, and
presses refused. No labels per tool or person: both are unbounded."""

from __future__ import annotations

from datetime import timedelta

from prometheus_client import CollectorRegistry, Counter, Histogram

from bot.ports.approvals import ApprovalState

DECISION_BUCKETS = (5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 900.0, 1800.0, 3600.0, 14400.0, 86400.0)


class ApprovalMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.asked = Counter(
            "switchboard_approvals_asked",
            "Tool calls that waited for a person's decision",
            registry=registry,
        )
        self.outcomes = Counter(
            "switchboard_approvals",
            "Approval requests by how they ended",
            ["outcome"],
            registry=registry,
        )
        self.seconds = Histogram(
            "switchboard_approval_decision_seconds",
            "Time from a request to a person's decision",
            ["outcome"],
            buckets=DECISION_BUCKETS,
            registry=registry,
        )
        self.refused = Counter(
            "switchboard_approval_presses_refused",
            "Decisions refused: not allowed, or not a decision the tool allows",
            registry=registry,
        )
        for state in ApprovalState:
            if state is not ApprovalState.PENDING:
                self.outcomes.labels(outcome=state.value)

    def decided(self, state: ApprovalState, waited: timedelta | None) -> None:
        self.outcomes.labels(outcome=state.value).inc()
        if waited is not None:
            self.seconds.labels(outcome=state.value).observe(max(0.0, waited.total_seconds()))
