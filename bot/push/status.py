"""Where a push's delivery stands (``GET /api/v1/deliveries/{id}``, ``switchboard delivery``).

A push has no table of its own: its delivery id is a correlation id. A text or file push is
its outbox rows; a ``run_agent`` push is its journal entry (the agent run: accepted,
running, handled, failed) and the answer's rows (``<id>/final/<n>``). The delivery status is
worked out from the rows only, so it stays apart from the run's: a run that failed still
delivers its apology, and a withdrawn progress placeholder is no failed delivery.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from bot.messages import OutboundFile
from bot.ports import Store
from bot.ports.push import PUSH_TAG, DeliveryState, PushKind
from bot.records import InboundStatus, JournalEntry, OutboxRow, OutboxState


@dataclass(frozen=True, slots=True, kw_only=True)
class RunReport:
    """The agent run of a ``run_agent`` push, as the journal has it."""

    status: InboundStatus
    reason: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class DeliveryReport:
    delivery_id: str
    kind: PushKind
    status: DeliveryState
    error: str | None
    channel: str
    chat_id: str
    topic_id: str | None
    created_at: datetime
    rows: tuple[OutboxRow, ...]
    """The rows that make up the delivery, in recording order."""
    run: RunReport | None = None


async def delivery_report(store: Store, delivery_id: str) -> DeliveryReport | None:
    """The delivery, or ``None`` when no push has this id."""
    rows = sorted(await store.outbox.for_correlation(delivery_id), key=lambda row: row.id)
    entry = await _prompt(store, delivery_id)
    if entry is None:
        pushed = tuple(row for row in rows if f"/{PUSH_TAG}/" in row.item.idempotency_key)
        if not pushed:
            return None
        first = pushed[0].item
        status, error = rows_state(pushed)
        kind = PushKind.FILE if isinstance(first.delivery, OutboundFile) else PushKind.TEXT
        destination = first.delivery.destination
        return DeliveryReport(
            delivery_id=delivery_id,
            kind=kind,
            status=status,
            error=error,
            channel=destination.channel,
            chat_id=destination.chat_id,
            topic_id=destination.topic_id,
            created_at=pushed[0].created_at,
            rows=pushed,
        )
    answer = tuple(row for row in rows if f"{delivery_id}/final/" in row.item.idempotency_key)
    status, error = _run_state(entry, answer)
    message = entry.message
    return DeliveryReport(
        delivery_id=delivery_id,
        kind=PushKind.RUN_AGENT,
        status=status,
        error=error,
        channel=message.channel,
        chat_id=message.chat_id,
        topic_id=message.thread_root_id,
        created_at=entry.recorded_at,
        rows=answer,
        run=RunReport(status=entry.status, reason=entry.reason),
    )


async def _prompt(store: Store, delivery_id: str) -> JournalEntry | None:
    for entry in await store.inbound.find(None, delivery_id):
        if entry.correlation_id == delivery_id:
            return entry
    return None


def _run_state(
    entry: JournalEntry, answer: Sequence[OutboxRow]
) -> tuple[DeliveryState, str | None]:
    if answer:
        return rows_state(answer)
    if entry.status is InboundStatus.ACCEPTED:
        return DeliveryState.QUEUED, None
    if entry.status is InboundStatus.RUNNING:
        return DeliveryState.RUNNING, None
    return DeliveryState.DEAD, f"no answer was sent: {entry.reason or entry.status}"


def rows_state(rows: Sequence[OutboxRow]) -> tuple[DeliveryState, str | None]:
    """Dead if any row is; sent when all are; running once any was sent or tried."""
    for row in rows:
        if row.state is OutboxState.DEAD:
            return DeliveryState.DEAD, row.last_error
    if all(row.state is OutboxState.SENT for row in rows):
        return DeliveryState.SENT, None
    pending_error = next((row.last_error for row in rows if row.last_error), None)
    if any(row.state is OutboxState.SENT or row.attempts for row in rows):
        return DeliveryState.RUNNING, pending_error
    return DeliveryState.QUEUED, pending_error
