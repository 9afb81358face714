"""Crash recovery at startup (design §11): nothing the daemon accepted is silently lost.

For each journaled message whose turn did not complete: if its answer was already recorded
in the outbox, the outbox delivers it; otherwise the turn runs again — once, with a short
"resuming after restart" notice if it had started. A turn that was already re-run once gets
an apology instead of a third attempt.

Placeholders the crashed process left are finished here, never left "thinking": one that
was sent is edited to say the turn was interrupted and the answer follows (the re-run answers
in a new message: it may end before it would show a placeholder, and merged messages give it
another correlation id); one that was never sent is withdrawn.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from bot.delivery.replies import ReplyContext, plan_text
from bot.messages import OutboundKind, OutboundText, TextEdit
from bot.pipeline.bus import Accepted, InboundBus
from bot.pipeline.sessions import Sessions, destination_for
from bot.pipeline.turns import RESUMED_PREFIX, TURN_PREFIX
from bot.ports import ChannelCapabilities, Store
from bot.records import InboundStatus, JournalEntry, OutboxItem, OutboxState

logger = logging.getLogger(__name__)

Notify = Callable[[JournalEntry, str, str], Awaitable[None]]
"""Post ``text`` into the entry's conversation; the third argument names the notice (its
idempotency keys), so a later notice for the same message is never taken for an earlier one."""
Submit = Callable[[Sequence[OutboxItem]], Awaitable[list[int]]]
CapabilitiesOf = Callable[[str], ChannelCapabilities | None]

RESUMING_NOTICE = "🔄 Resuming after a restart…"
GAVE_UP_NOTICE = (
    "⚠️ Sorry — this message could not be answered after a restart. Please send it again."
)
INTERRUPTED_PLACEHOLDER = "⏹ Interrupted by a restart — the answer follows below."
PLACEHOLDER_TAG = "/placeholder/"


def _turn_correlation(entry: JournalEntry) -> str:
    reason = entry.reason or ""
    for prefix in (RESUMED_PREFIX, TURN_PREFIX):
        if reason.startswith(prefix):
            return reason[len(prefix) :]
    return entry.correlation_id


async def _answer_recorded(store: Store, correlation_id: str) -> bool:
    rows = await store.outbox.for_correlation(correlation_id)
    return any(row.item.idempotency_key.startswith(f"{correlation_id}/final/") for row in rows)


async def finish_placeholders(store: Store, correlation_id: str, submit: Submit) -> int:
    """Finish the placeholders of an interrupted turn; returns how many were edited."""
    edits: list[OutboxItem] = []
    for row in await store.outbox.for_correlation(correlation_id):
        delivery = row.item.delivery
        if PLACEHOLDER_TAG not in row.item.idempotency_key or not isinstance(
            delivery, OutboundText
        ):
            continue
        if row.state is OutboxState.PENDING:
            await store.outbox.mark_dead(row.id, "withdrawn: the turn was interrupted")
            continue
        if row.state is not OutboxState.SENT or not row.sent_message_ids:
            continue
        edit = TextEdit(
            destination=delivery.destination,
            message_id=row.sent_message_ids[0],
            text=INTERRUPTED_PLACEHOLDER,
            kind=OutboundKind.NOTICE,
        )
        key = f"{correlation_id}/recovery-placeholder/{len(edits)}"
        edits.append(
            OutboxItem(
                idempotency_key=key, delivery=edit, key=row.item.key,
                thread_id=row.item.thread_id, correlation_id=correlation_id,
            )
        )  # fmt: skip
    if edits:
        await submit(edits)
    return len(edits)


async def recover(store: Store, bus: InboundBus, notify: Notify, submit: Submit) -> int:
    """Requeue unfinished messages; returns how many will run again."""
    requeued = 0
    interrupted: set[str] = set()
    resumed: set[str] = set()
    for entry in await store.inbound.unfinished():
        if await _answer_recorded(store, _turn_correlation(entry)):
            await store.inbound.update(entry.id, InboundStatus.HANDLED, reason="answer recorded")
            continue
        started = entry.status is InboundStatus.RUNNING
        turn = _turn_correlation(entry)
        if started and turn not in interrupted:
            interrupted.add(turn)
            await finish_placeholders(store, turn, submit)
        if (entry.reason or "").startswith(RESUMED_PREFIX):
            await notify(entry, GAVE_UP_NOTICE, "recovery-gave-up")
            await store.inbound.update(
                entry.id, InboundStatus.FAILED, reason="failed after restart"
            )
            continue
        if started and turn not in resumed:  # one notice per interrupted turn
            resumed.add(turn)
            await notify(entry, RESUMING_NOTICE, "recovery")
        bus.put_recovered(
            Accepted(
                entry_id=entry.id,
                message=entry.message,
                correlation_id=entry.correlation_id,
                recovered=started,
            )
        )
        requeued += 1
    if requeued:
        logger.info("recovery: %d unfinished message(s) requeued", requeued)
    return requeued


def notice_sender(submit: Submit, sessions: Sessions, caps_of: CapabilitiesOf) -> Notify:
    """A ``Notify`` that posts through the outbox into the message's conversation."""

    async def notify(entry: JournalEntry, text: str, tag: str) -> None:
        caps = caps_of(entry.message.channel)
        if caps is None:
            return
        key = entry.key or sessions.scoped_key(entry.message)
        ctx = ReplyContext(
            key=key,
            thread_id=entry.thread_id,
            destination=destination_for(entry.message, key),
            reply_to=entry.message.message_id,
            correlation_id=entry.correlation_id,
            turn_tag=tag,
        )
        deliveries = plan_text(ctx, text, caps)
        await submit([ctx.item(i, d) for i, d in enumerate(deliveries)])

    return notify
