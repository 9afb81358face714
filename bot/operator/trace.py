"""The whole path of one inbound message, read from the store (``switchboard trace`` prints
it, ``/console/trace`` shows it).

The journal entry gives the dedupe decision (the first delivery is ``accepted``, each
redelivery is dropped as ``duplicate``), the routing decision (status and reason), the
conversation key and the thread. A ``turn <correlation>`` reason names the turn that answered
it — several queued messages can be answered by one turn carrying the last one's correlation —
so the outbox rows of both the message's own correlation (notices, command replies) and of that
turn are shown, each with every platform call made for it.

``trace_reference`` takes any id a user is shown: a platform message id, else a correlation id
(the ``ref`` of an error reply is its turn's, which is its last message's; a ``run_agent``
push's delivery id is one too). ``message_cells`` and ``message_json`` list the newest journal
entries with both ids (``switchboard conversations --messages``), so an operator can find one.

A feature adds what it knows of an entry's turn below it (``more``, by journal entry id): the
approvals it paused for (``bot.approvals.views``), which the CLI and the console look up.

Every line of the text form is escaped (``escape_controls``): ids, reasons and file names
come from strangers and the model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from bot.operator.labels import (
    NONE,
    JsonObject,
    clip,
    describe_delivery,
    iso,
    key_json,
    outbox_json,
    table,
    when,
)
from bot.pipeline.turn_marks import TurnMark
from bot.ports import Store
from bot.records import DeliveryAttempt, InboundStatus, JournalEntry, OutboxRow, OutboxState
from bot.text.escape import escape_controls

ACCEPTED = "accepted"
DUPLICATE = "duplicate"


@dataclass(frozen=True, slots=True, kw_only=True)
class RowTrace:
    row: OutboxRow
    calls: tuple[DeliveryAttempt, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageTrace:
    entry: JournalEntry
    answered_by: str | None
    rows: tuple[RowTrace, ...]

    @property
    def decisions(self) -> tuple[str, ...]:
        """The dedupe decision for every delivery of this message, in order."""
        return (ACCEPTED, *(DUPLICATE,) * self.entry.duplicates)

    @property
    def correlations(self) -> tuple[str, ...]:
        """The message's own correlation id and its answering turn's (often the same)."""
        return _correlations(self.entry, self.answered_by)


def _correlations(entry: JournalEntry, answered_by: str | None) -> tuple[str, ...]:
    return tuple(dict.fromkeys([entry.correlation_id, answered_by or entry.correlation_id]))


def answering_turn(reason: str | None) -> str | None:
    """The correlation id in a ``turn <id>`` journal reason (``TurnMark``: also ``waiting
    turn <id>``, with or without ``interrupted=N``, and the older ``resumed turn <id>``)."""
    mark = TurnMark.parse(reason)
    return None if mark is None else mark.turn


async def trace_message(store: Store, message_id: str, channel: str | None) -> list[MessageTrace]:
    """Every journaled message with this platform id (ids are per chat on some platforms)."""
    return [
        await _trace_entry(store, entry) for entry in await store.inbound.find(channel, message_id)
    ]


class Matched(StrEnum):
    """Which id of the journal entries a reference is."""

    MESSAGE_ID = "message_id"
    CORRELATION_ID = "correlation_id"


@dataclass(frozen=True, slots=True, kw_only=True)
class ReferenceTrace:
    ref: str
    matched: Matched
    traces: tuple[MessageTrace, ...]


async def trace_reference(store: Store, ref: str, channel: str | None) -> ReferenceTrace | None:
    """The journaled messages ``ref`` names: by their platform message id, else by their
    correlation id; ``None`` when it is neither (a push's or schedule's id, or unknown)."""
    traces = await trace_message(store, ref, channel)
    if traces:
        return ReferenceTrace(ref=ref, matched=Matched.MESSAGE_ID, traces=tuple(traces))
    entries = [
        entry
        for entry in await store.inbound.find_correlation(ref)
        if channel is None or entry.message.channel == channel
    ]
    if not entries:
        return None
    traces = [await _trace_entry(store, entry) for entry in entries]
    return ReferenceTrace(ref=ref, matched=Matched.CORRELATION_ID, traces=tuple(traces))


async def _trace_entry(store: Store, entry: JournalEntry) -> MessageTrace:
    answered_by = answering_turn(entry.reason)
    rows: dict[int, OutboxRow] = {}
    for correlation in _correlations(entry, answered_by):
        rows.update((row.id, row) for row in await store.outbox.for_correlation(correlation))
    traced = [
        RowTrace(row=row, calls=tuple(await store.outbox.attempts(row.id)))
        for _, row in sorted(rows.items())
    ]
    return MessageTrace(entry=entry, answered_by=answered_by, rows=tuple(traced))


def run_outcome(trace: MessageTrace) -> str:
    """What came of the message as far as the agent is concerned, in words."""
    entry, turn, reason = trace.entry, trace.answered_by, trace.entry.reason or ""
    if turn is not None:
        if entry.status is InboundStatus.RUNNING:
            return f"turn {turn} running, or cut short by a stop (resumed at the next start)"
        return f"answered by turn {turn}"
    by_status = {
        InboundStatus.DROPPED: f"no run: dropped ({reason or 'no reason recorded'})",
        InboundStatus.ACCEPTED: "not started yet (queued, or resumed at the next start)",
        InboundStatus.FAILED: f"failed: {reason}",
    }
    if entry.status in by_status:
        return by_status[entry.status]
    if reason == "asked":
        return "the agent asked a question"
    return f"no run: answered {reason}" if reason.startswith("command ") else reason or entry.status


def dedupe_text(trace: MessageTrace) -> str:
    entry = trace.entry
    if entry.duplicates == 0:
        return f"{ACCEPTED} (no redeliveries)"
    plural = "y" if entry.duplicates == 1 else "ies"
    return (
        f"{ACCEPTED}, then {DUPLICATE} x{entry.duplicates} (redeliver{plural} dropped;"
        f" last {when(entry.last_duplicate_at)})"
    )


# --------------------------------------------------------------------------- output


def trace_json(trace: MessageTrace) -> JsonObject:
    entry = trace.entry
    return {
        **message_json(entry),
        "updated_at": iso(entry.updated_at),
        "dedupe": {
            "decisions": list(trace.decisions),
            "duplicates": entry.duplicates,
            "last_duplicate_at": iso(entry.last_duplicate_at),
        },
        "key": key_json(entry.key),
        "thread_id": entry.thread_id,
        "answered_by": trace.answered_by,
        "run": run_outcome(trace),
        "outbox": [outbox_json(traced.row, traced.calls) for traced in trace.rows],
    }


def reference_json(
    found: ReferenceTrace, more: Mapping[int, JsonObject] | None = None
) -> JsonObject:
    """``message_id`` is the id asked for, whichever it matched (as before ``ref``);
    ``more``: what a feature adds to an entry (by journal entry id), e.g. its approvals."""
    more = more or {}
    return {
        "message_id": found.ref,
        "ref": found.ref,
        "matched": str(found.matched),
        "entries": [{**trace_json(t), **more.get(t.entry.id, {})} for t in found.traces],
    }


def reference_text(found: ReferenceTrace, more: Mapping[int, Sequence[str]] | None = None) -> str:
    """``more``: escaped lines a feature adds under an entry (by journal entry id)."""
    more = more or {}
    traced = "\n\n".join(
        "\n".join([trace_text(trace), *more.get(trace.entry.id, ())]) for trace in found.traces
    )
    if found.matched is Matched.MESSAGE_ID:
        return traced
    heading = (
        f"ref {found.ref} is a correlation id (a turn's, as its error reply shows it): the"
        " message it belongs to, with every reply that carries it"
    )
    return f"{escape_controls(heading)}\n{traced}"


def trace_text(trace: MessageTrace) -> str:
    entry, message = trace.entry, trace.entry.message
    decision = str(entry.status) + (f" ({entry.reason})" if entry.reason else "")
    facts = [
        ("received", f"{when(message.received_at)} (journaled {when(entry.recorded_at)})"),
        ("dedupe", dedupe_text(trace)),
        ("decision", decision),
        ("key", NONE if entry.key is None else entry.key.describe()),
        ("thread", entry.thread_id or NONE),
        ("correlation", entry.correlation_id),
        ("run", run_outcome(trace)),
    ]
    lines = [
        f"message {message.message_id} on {message.channel}, chat {message.chat_id}"
        f" ({message.chat_type}) from {message.sender.id}: journal entry #{entry.id}",
        *(f"  {name:<12} {value}" for name, value in facts),
    ]
    lines = [escape_controls(line) for line in lines]
    if not trace.rows:
        lines.append(f"  {'outbox':<12} no rows")
    for traced in trace.rows:
        lines += row_lines(traced)
    return "\n".join(lines)


def row_lines(traced: RowTrace) -> list[str]:
    row = traced.row
    sent = " ".join(row.sent_message_ids) or NONE
    lines = [
        f"  outbox #{row.id}: {describe_delivery(row.item.delivery)}, {row.state},"
        f" {row.attempts} attempt(s), message ids {sent}",
        f"    key {row.item.idempotency_key}, last error {clip(row.last_error)}",
    ]
    lines = [escape_controls(line) for line in lines]
    if row.state is OutboxState.PENDING:
        lines.append(f"    next attempt {when(row.next_attempt_at)}")
    if not traced.calls:
        lines.append("    no platform calls yet")
        return lines
    cells = [[when(call.at, millis=True), call.outcome, clip(call.detail)] for call in traced.calls]
    lines.append(table(("CALLED", "RESULT", "DETAIL"), cells, indent="    "))
    return lines


# --------------------------------------------------------------------------- recent ids


MESSAGE_HEADERS = ("RECEIVED", "CHANNEL", "CHAT", "MESSAGE", "REF", "STATUS")
"""``switchboard conversations --messages``: each journaled message's ids, never its text."""


def message_cells(entry: JournalEntry) -> list[str]:
    message = entry.message
    return [
        when(message.received_at),
        message.channel,
        message.chat_id,
        message.message_id,
        entry.correlation_id,
        str(entry.status),
    ]


def message_json(entry: JournalEntry) -> JsonObject:
    message = entry.message
    return {
        "entry_id": entry.id,
        "channel": message.channel,
        "account_id": message.account_id,
        "chat_id": message.chat_id,
        "chat_type": message.chat_type,
        "message_id": message.message_id,
        "correlation_id": entry.correlation_id,
        "sender_id": message.sender.id,
        "status": entry.status,
        "reason": entry.reason,
        "received_at": iso(message.received_at),
        "recorded_at": iso(entry.recorded_at),
    }


def message_table(entries: Sequence[JournalEntry]) -> str:
    return table(MESSAGE_HEADERS, [message_cells(entry) for entry in entries])
