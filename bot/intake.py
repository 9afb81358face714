"""``publish``: admission → durable dedupe → bus (SPEC §5).

An adapter acknowledges its platform event only when this returns an ``ack``-able admission,
which happens after the message is in the journal.
"""

from __future__ import annotations

import logging
import uuid

from bot.bus import Accepted, InboundBus
from bot.messages import InboundMessage
from bot.observe import Counters, DropReason, log_drop
from bot.ports import Admission, Store

logger = logging.getLogger(__name__)


def new_correlation_id() -> str:
    return uuid.uuid4().hex[:12]


class Intake:
    def __init__(self, store: Store, bus: InboundBus, counters: Counters) -> None:
        self._store = store
        self._bus = bus
        self._counters = counters

    async def publish(self, message: InboundMessage) -> Admission:
        if self._bus.closed:
            return Admission.CLOSED
        if not self._bus.reserve():
            self._counters.inbound(message.channel, DropReason.QUEUE_FULL)
            log_drop(message, DropReason.QUEUE_FULL)
            return Admission.QUEUE_FULL
        correlation_id = new_correlation_id()
        try:
            entry_id = await self._store.inbound.record(message, correlation_id)
        except BaseException:
            self._bus.release()
            raise
        if entry_id is None:
            self._bus.release()
            await self._store.inbound.count_duplicate(message)
            self._counters.inbound(message.channel, DropReason.DUPLICATE)
            log_drop(message, DropReason.DUPLICATE)
            return Admission.DUPLICATE
        self._bus.put_reserved(
            Accepted(entry_id=entry_id, message=message, correlation_id=correlation_id)
        )
        return Admission.ACCEPTED
