"""The store as a process killed in the middle of a turn leaves it, for the recovery tests."""

from __future__ import annotations

from pathlib import Path

from bot.messages import ChatType, ConversationKey, Destination, OutboundKind, OutboundText
from bot.records import InboundStatus, OutboxItem, OutboxRow
from store.sqlite import SqliteStore
from tests.fakes.channel import dm
from tests.store.support import record

CHAT = "dm-alice"
KEY = ConversationKey(channel="fake", chat_id=CHAT)
DESTINATION = Destination(channel="fake", chat_id=CHAT, chat_type=ChatType.DM)


async def journal_running_turn(state_dir: Path, text: str) -> None:
    """Leave the store as a crash in the middle of a turn would: journaled, running."""
    async with SqliteStore.from_state_dir(state_dir) as store:
        message = dm(text, message_id="1")
        entry_id = await record(store, message, "corr1")
        assert entry_id is not None
        await store.inbound.update(entry_id, InboundStatus.RUNNING, reason="turn corr1", key=KEY)


async def recorded_before_the_crash(
    store: SqliteStore,
    idempotency_key: str,
    text: str,
    kind: OutboundKind,
    message_id: str | None = None,
) -> OutboxRow:
    """An outbox row of turn ``corr1`` that the crashed process recorded and, if
    ``message_id`` is given, had seen sent as that message (else it is left pending)."""
    delivery = OutboundText(destination=DESTINATION, text=text, kind=kind, reply_to="1")
    (row,) = await store.outbox.enqueue_rows([
        OutboxItem(idempotency_key=idempotency_key, delivery=delivery, key=KEY,
                   thread_id="t1", correlation_id="corr1")
    ])  # fmt: skip
    if message_id is not None:
        await store.outbox.mark_sent(row.id, (message_id,))
    return row
