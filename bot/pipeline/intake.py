"""``publish``: admission → durable dedupe → bus (design §5).

An adapter acknowledges its platform event only when this returns an ``ack``-able admission,
which happens after the message is in the journal. A platform batch (one Telegram
``getUpdates`` answer) goes through ``many``: one journal write for all of it instead of one
round trip to the store per message.

A message refused because the queue is full is not dropped: it was never journaled nor
acknowledged, and every adapter leaves such an event unacknowledged (``Admission.ack``), so
the platform delivers it again (the console and the push API tell their caller). The log says
"refused" per message, and warns once each time the queue fills up.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence

from bot.messages import InboundMessage
from bot.metrics import Counters, DropReason, log_drop
from bot.pipeline.bus import Accepted, InboundBus
from bot.ports import Admission, Store

logger = logging.getLogger(__name__)


def new_correlation_id() -> str:
    return uuid.uuid4().hex[:12]


Admit = Callable[[Sequence[Accepted]], Awaitable[None]]
"""Puts journaled messages (each holding a bus reservation) on the bus, or leaves them to the
replica that holds their chat (``ChatOwnership.admit``)."""


class Intake:
    """The ``Publish`` port: adapters call it, or its ``many``."""

    def __init__(
        self, store: Store, bus: InboundBus, counters: Counters, admit: Admit | None = None
    ) -> None:
        self._store = store
        self._bus = bus
        self._counters = counters
        self._admit = admit
        self._full = False
        """The queue refused the last message offered (a fill-up is warned about once)."""

    async def __call__(self, message: InboundMessage) -> Admission:
        return await self.publish(message)

    async def publish(self, message: InboundMessage) -> Admission:
        (admission,) = await self.many([message])
        return admission

    async def many(self, messages: Sequence[InboundMessage]) -> list[Admission]:
        return await self._admit_all([(message, new_correlation_id()) for message in messages])

    async def pushed(self, message: InboundMessage, correlation_id: str) -> Admission:
        """A prompt the operator pushed (design §19), journaled under the push's delivery id as
        its correlation id, so the answer's outbox rows carry that id too."""
        (admission,) = await self._admit_all([(message, correlation_id)])
        return admission

    async def _admit_all(self, offered: Sequence[tuple[InboundMessage, str]]) -> list[Admission]:
        messages = [message for message, _ in offered]
        admitted = self._reserve(messages)
        if admitted:
            self._full = False
        refused = self._refusals(messages[len(admitted) :])
        if not admitted:
            return refused
        entries = list(offered[: len(admitted)])
        try:
            entry_ids = await self._store.inbound.record_many(entries)
        except BaseException:
            for _ in admitted:
                self._bus.release()
            raise
        # Every reservation is settled before the first await below: a failure while noting
        # duplicates can then neither leak bus capacity nor strand a recorded message.
        admissions: list[Admission] = []
        duplicates: list[InboundMessage] = []
        fresh: list[Accepted] = []
        for (message, correlation_id), entry_id in zip(entries, entry_ids, strict=True):
            if entry_id is None:
                self._bus.release()
                duplicates.append(message)
                admissions.append(Admission.DUPLICATE)
                continue
            fresh.append(
                Accepted(entry_id=entry_id, message=message, correlation_id=correlation_id)
            )
            admissions.append(Admission.ACCEPTED)
        if self._admit is None:
            for item in fresh:
                self._bus.put_reserved(item)
        elif fresh:
            await self._admit(fresh)  # settles every reservation of ``fresh``
        for message in duplicates:
            self._counters.inbound(message.channel, DropReason.DUPLICATE)
            log_drop(message, DropReason.DUPLICATE)
            await self._store.inbound.count_duplicate(message)
        return admissions + refused

    def _reserve(self, messages: Sequence[InboundMessage]) -> Sequence[InboundMessage]:
        """The leading messages the bus has room for (it stops at the first it has not)."""
        for index, _ in enumerate(messages):
            if not self._bus.reserve():
                return messages[:index]
        return messages

    def _refusals(self, messages: Sequence[InboundMessage]) -> list[Admission]:
        if not messages:
            return []
        if self._bus.closed:
            return [Admission.CLOSED] * len(messages)
        if not self._full:
            self._full = True
            logger.warning(
                "inbound queue full (daemon.inbound_queue_size=%d): refusing new messages"
                " unacknowledged until the router catches up; their platforms redeliver them",
                self._bus.capacity,
            )
        for message in messages:
            self._counters.inbound(message.channel, DropReason.QUEUE_FULL)
            _log_refused(message)
        return [Admission.QUEUE_FULL] * len(messages)


def _log_refused(message: InboundMessage) -> None:
    """Not ``log_drop``: nothing is lost, the platform delivers the message again."""
    logger.info(
        "refused channel=%s chat=%r message=%r user=%r reason=%s: not acknowledged, the"
        " platform will redeliver it",
        message.channel,
        message.chat_id,
        message.message_id,
        message.sender.id,
        DropReason.QUEUE_FULL,
    )
