"""What a turn does when its message is edited or withdrawn while it runs (design §21).

An edit cancels the turn and runs it again with the new text under the same correlation id,
so the restart finds the first run's placeholder (recorded under the same key) and streams
into it: the old partial answer is replaced, and one answer is all the chat ever shows. A
recall cancels it without a word; its placeholder is deleted where the platform lets
the bot delete, else edited to say the message was withdrawn (``endings.end_turn``).
"""

from __future__ import annotations

from bot.delivery.progress import ProgressStream
from bot.delivery.writer import Record
from bot.messages import MessageRemoval
from bot.pipeline.recovery import sent_placeholders
from bot.ports import Store
from bot.records import OutboxItem, OutboxRow

RESTART_TAG = "revised"
"""The idempotency namespace of a restarted turn's answer (``<correlation>/revised/N``): if
the first run recorded its answer just before the edit cancelled it, the restart's answer
still goes out (into the same placeholder) instead of being taken for that one."""
RECALLED_REASON = "withdrawn"
"""The journal reason of a message whose author recalled or deleted it."""
RECALLED_TAG = "withdrawn"
"""The idempotency namespace of a withdrawn turn's placeholder removal: whichever of the turn
and the recall removes it, the row is one (``<correlation>/withdrawn/0``)."""
RESTARTING_TEXT = "✏️ Your message was edited — answering the new version…"
RECALLED_TEXT = "🗑️ The message was withdrawn."


async def sent_placeholder(store: Store, correlation_id: str) -> OutboxRow | None:
    """The first placeholder a turn of ``correlation_id`` sent, if one went out."""
    rows = await sent_placeholders(store, correlation_id)
    return rows[0] if rows else None


def removal_item(row: OutboxRow, message_id: str, idempotency_key: str) -> OutboxItem:
    """The deletion of ``message_id``, a message the bot sent for ``row``'s conversation."""
    removal = MessageRemoval(destination=row.item.delivery.destination, message_id=message_id)
    return OutboxItem(
        idempotency_key=idempotency_key,
        delivery=removal,
        key=row.item.key,
        thread_id=row.item.thread_id,
        correlation_id=row.item.correlation_id,
    )


async def adopt_placeholder(stream: ProgressStream, store: Store, correlation_id: str) -> None:
    """Point a restarted turn's stream at the placeholder its first run sent, if any."""
    row = await sent_placeholder(store, correlation_id)
    if row is not None:
        await stream.adopt(row.sent_message_ids[0], RESTARTING_TEXT)


async def remove_left_placeholder(store: Store, record: Record, correlation_id: str) -> None:
    """A turn withdrawn before its stream took over the placeholder an earlier run of it
    sent (a restart that had not begun, or was just beginning): that placeholder goes."""
    row = await sent_placeholder(store, correlation_id)
    if row is not None:
        key = f"{correlation_id}/{RECALLED_TAG}/0"
        await record([removal_item(row, row.sent_message_ids[0], key)])
