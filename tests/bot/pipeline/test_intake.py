"""Intake's bookkeeping of bus room when the store fails part-way through a batch."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import pytest

from bot.messages import InboundMessage
from bot.metrics import Counters
from bot.pipeline.bus import InboundBus
from bot.pipeline.intake import Intake
from bot.ports import Admission, Store
from tests.fakes.channel import dm


class StoreDown(Exception):
    pass


class JournalThatFailsOnDuplicates:
    """An inbound journal that has seen ``known`` before and cannot note redeliveries."""

    def __init__(self, known: set[str]) -> None:
        self.known = known
        self.next_id = 1

    async def record_many(self, entries: Sequence[tuple[InboundMessage, str]]) -> list[int | None]:
        ids: list[int | None] = []
        for message, _ in entries:
            if message.message_id in self.known:
                ids.append(None)
                continue
            self.known.add(message.message_id)
            ids.append(self.next_id)
            self.next_id += 1
        return ids

    async def count_duplicate(self, message: InboundMessage) -> None:
        raise StoreDown("database is locked")


class JournalOnlyStore:
    def __init__(self, inbound: JournalThatFailsOnDuplicates) -> None:
        self.inbound = inbound


async def test_a_failure_noting_duplicates_neither_leaks_room_nor_strands_a_message() -> None:
    bus = InboundBus(capacity=3)
    journal = JournalThatFailsOnDuplicates(known={"old-1", "old-2"})
    intake = Intake(cast(Store, JournalOnlyStore(journal)), bus, Counters())
    batch = [
        dm("again", message_id="old-1"),
        dm("again", message_id="old-2"),
        dm("new", message_id="m3"),
    ]
    with pytest.raises(StoreDown):
        await intake.many(batch)  # the adapter does not ack; the platform redelivers
    assert bus.depth == 1  # the new message is on the bus; no reservation is left over
    assert (await bus.get()).message.text == "new"
    assert [bus.reserve() for _ in range(4)] == [True, True, True, False]


async def test_redelivering_the_failed_batch_adds_nothing_twice() -> None:
    bus = InboundBus(capacity=3)
    journal = JournalThatFailsOnDuplicates(known=set())
    intake = Intake(cast(Store, JournalOnlyStore(journal)), bus, Counters())
    assert await intake.many([dm("a", message_id="m1")]) == [Admission.ACCEPTED]
    with pytest.raises(StoreDown):
        await intake.many([dm("a", message_id="m1"), dm("b", message_id="m2")])
    assert [(await bus.get()).message.message_id for _ in range(bus.depth)] == ["m1", "m2"]
