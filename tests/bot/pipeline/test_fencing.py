"""A replica that stalls past the lease expiry loses its chats to another, and once it runs
again answers nothing for them (design §11 "replicas", fencing): its turn's answer is refused
by the fence, its progress stops, and the new holder answers once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from bot.messages import TextEdit
from bot.pipeline.recovery import INTERRUPTED_PLACEHOLDER
from bot.records import OutboxState
from tests.bot.pipeline.replica_support import Side, replica
from tests.fakes.channel import dm
from tests.fakes.common.waiting import eventually

QUICK = {"daemon": {"replica_expiry_s": 3.0, "shutdown_grace_s": 0.5, "rebalance_moves": 0}}
"""A chat moves only because its holder stalled: no rebalancing, and an expiry long enough that
a loaded machine's late heartbeat (a busy 2-core CI box) does not pass for a stall."""


@asynccontextmanager
async def two(tmp_path: Path, schema: tuple[str, str]) -> AsyncIterator[tuple[Side, Side]]:
    async with (
        replica(tmp_path, "a", schema, **QUICK) as a,
        replica(tmp_path, "b", schema, **QUICK) as b,
    ):
        yield a, b


def fenced(side: Side, what: str) -> float:
    value = side.run.kernel.delivery.counters.registry.get_sample_value(
        "switchboard_fenced_total", {"what": what}
    )
    return value or 0.0


def learnt_the_loss(side: Side) -> bool:
    """The replica found the chat lost after its stall: at its next claim or verify."""
    return fenced(side, "claim") + fenced(side, "verify") >= 1


def stall_heartbeat(side: Side) -> asyncio.Event:
    """Stall the replica's heartbeat after its next beat (a GC pause, a partition from the
    store, SIGSTOP: to the others it stops being live) until the event is set."""
    heartbeat = side.run.daemon.heartbeat
    assert heartbeat is not None
    stalled = asyncio.Event()

    async def stall() -> None:
        await stalled.wait()

    heartbeat.after_beat.insert(0, stall)
    return stalled


async def test_a_stalled_replica_answers_nothing_for_the_chat_taken_from_it(
    tmp_path: Path, schema: tuple[str, str]
) -> None:
    async with two(tmp_path, schema) as (a, b):
        release_a, release_b = a.agent.hold("slow"), b.agent.hold("slow")
        await a.channel.inject(dm("slow first", message_id="1"))
        await a.agent.wait_runs(1)
        stalled = stall_heartbeat(a)
        await eventually(lambda: _holds_one(b), within=10)
        await b.agent.wait_runs(1)  # b runs the turn it took over again
        shown_by_a = len(a.channel.sent)
        release_a.set()  # a's run ends after the takeover: its answer must not go out
        await eventually(lambda: fenced(a, "commit") == 1)
        await a.run.kernel.conversations.lanes.wait_idle()
        release_b.set()
        await b.channel.wait_text("echo: slow first")
        stalled.set()
    assert a.channel.sent[shown_by_a:] == []
    assert [text for text in b.channel.texts() if "echo" in text] == ["echo: slow first"]


async def test_a_replica_learns_of_the_loss_after_its_first_beat_and_drops_its_queue(
    tmp_path: Path, schema: tuple[str, str]
) -> None:
    """The heartbeat after a stall compares every token: the turn still running for the lost
    chat is cancelled without a word, and what was queued behind it is left to the holder."""
    async with two(tmp_path, schema) as (a, b):
        a.agent.hold("slow")
        await a.channel.inject(dm("slow first", message_id="1"))
        await a.agent.wait_runs(1)
        await a.channel.inject(dm("queued", message_id="2"))
        stalled = stall_heartbeat(a)
        await eventually(lambda: _holds_one(b), within=10)
        await b.channel.wait_text("slow first")
        await b.channel.wait_text("queued")
        shown_by_a = len(a.channel.sent)
        stalled.set()  # a beats, then compares its tokens with the store's
        await eventually(lambda: fenced(a, "verify") == 1)
        await a.run.kernel.conversations.lanes.wait_idle()
    assert a.channel.sent[shown_by_a:] == []
    assert len(a.agent.runs) == 1


async def test_a_placeholder_the_holder_never_learnt_of_is_removed_by_the_holder(
    tmp_path: Path, schema: tuple[str, str]
) -> None:
    """The platform took the stalled replica's placeholder, but the replica heard back only
    after the takeover (its row was withdrawn as never sent): once it learns of the loss it
    records the placeholder's removal, which the holder sends (here the notice edit: the fake
    platform cannot delete), so no stale "working… ▍" stays beside the answer."""
    async with two(tmp_path, schema) as (a, b):
        a.agent.hold("slow")
        heard = a.channel.answer_gate = asyncio.Event()
        try:
            await a.channel.inject(dm("slow first", message_id="1"))
            placeholder = await a.channel.wait_for(lambda s: s.is_progress)
            stalled = stall_heartbeat(a)
            await eventually(lambda: _holds_one(b), within=10)
            await b.channel.wait_text("echo: slow first")
            stalled.set()  # a beats, learns the loss, and takes its placeholder back
            await eventually(lambda: learnt_the_loss(a))
        finally:
            heard.set()  # only now does a hear the platform took it
        removal = await b.channel.wait_for(
            lambda s: (
                isinstance(s.delivery, TextEdit) and s.delivery.message_id == placeholder.message_id
            ),
            within=10,
        )
        await a.run.kernel.conversations.lanes.wait_idle()
    assert removal.text == INTERRUPTED_PLACEHOLDER
    assert a.channel.texts() == [placeholder.text]  # and a itself sent nothing more


async def test_a_placeholder_the_holder_finished_is_not_taken_back_again(
    tmp_path: Path, schema: tuple[str, str]
) -> None:
    """A placeholder recorded as sent before the stall is the holder's to finish (the
    interrupted notice); the replica that lost the chat adds nothing to it."""
    async with two(tmp_path, schema) as (a, b):
        a.agent.hold("slow")
        await a.channel.inject(dm("slow first", message_id="1"))
        placeholder = await a.channel.wait_for(lambda s: s.is_progress)
        await eventually(lambda: _placeholder_recorded(a))
        stalled = stall_heartbeat(a)
        await eventually(lambda: _holds_one(b), within=10)
        await b.channel.wait_text("echo: slow first")
        stalled.set()
        await eventually(lambda: learnt_the_loss(a))
        await a.run.kernel.conversations.lanes.wait_idle()
        rows = await b.run.kernel.store.outbox.listing(OutboxState.PENDING)
    edits = [
        s.text
        for s in b.channel.sent
        if isinstance(s.delivery, TextEdit) and s.delivery.message_id == placeholder.message_id
    ]
    assert edits == [INTERRUPTED_PLACEHOLDER]
    assert rows == []


async def _placeholder_recorded(side: Side) -> bool:
    rows = await side.run.kernel.store.outbox.listing(OutboxState.SENT)
    return any("/placeholder/" in row.item.idempotency_key for row in rows)


async def _holds_one(side: Side) -> bool:
    return await side.held() == 1
