"""``JournalWindow`` (the console's charts and conversation search) on every backend: the
newest entries, filtered by channel and chat, and the times of a window."""

from __future__ import annotations

from datetime import timedelta

from bot.ports.activity import journal_window_of
from bot.records import InboundStatus
from tests.store.support import BackendStore, ManualClock, inbound, record


async def test_the_newest_entries_and_a_windows_times(
    store: BackendStore, clock: ManualClock
) -> None:
    window = journal_window_of(store)
    assert window is not None
    start = clock.now
    first = await record(store, inbound("m1"), "a")
    clock.advance(60)
    await record(store, inbound("m2", chat_id="c2"), "b")
    clock.advance(60)
    third = await record(store, inbound("m3", channel="slack"), "c")
    assert first is not None
    assert third is not None
    clock.advance(2.5)
    await store.inbound.update(first, InboundStatus.HANDLED, reason="turn a")
    newest = await window.recent(limit=2)
    assert [e.message.message_id for e in newest] == ["m3", "m2"]
    telegram = await window.recent(limit=10, channel="telegram")
    assert [e.message.message_id for e in telegram] == ["m2", "m1"]
    one_chat = await window.recent(limit=10, channel="telegram", chat_id="c1")
    assert [e.message.message_id for e in one_chat] == ["m1"]
    points = await window.points(start, limit=10)
    assert [p.recorded_at - start for p in points] == [timedelta(seconds=s) for s in (120, 60, 0)]
    handled = points[-1]
    assert (handled.status, handled.reason) == (InboundStatus.HANDLED, "turn a")
    assert (handled.updated_at - handled.recorded_at).total_seconds() == 122.5
    assert len(await window.points(clock.now, limit=10)) == 0
    assert len(await window.points(start, limit=1)) == 1
