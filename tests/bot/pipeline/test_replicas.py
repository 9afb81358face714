"""Two daemons on one PostgreSQL schema, in one process (design §11 "replicas"): a chat is
served by the replica that holds it, so a message that reaches the other replica is queued,
interrupts, is refused or stops the turn exactly as if it had reached the holder; a replica
that stops cleanly leaves its queued work to the other, which answers it at once."""

from __future__ import annotations

from pathlib import Path

from bot.records import InboundStatus
from tests.bot.pipeline.replica_support import replica
from tests.fakes.channel import dm, queued_reaction_on


async def test_a_message_reaching_the_other_replica_is_queued_behind_the_holders_turn(
    tmp_path: Path, schema: tuple[str, str]
) -> None:
    async with replica(tmp_path, "a", schema) as a, replica(tmp_path, "b", schema) as b:
        release = a.agent.hold("slow")
        await a.channel.inject(dm("slow first", message_id="1"))
        await a.agent.wait_runs(1)
        await b.channel.inject(dm("second", message_id="2"))
        await b.channel.inject(dm("third", message_id="3"))
        for message_id in ("2", "3"):
            await a.channel.wait_for(queued_reaction_on(message_id))
        release.set()
        await a.channel.wait_text("echo: second\n\nthird")
    assert [run.turn.text for run in a.agent.runs] == ["slow first", "second\n\nthird"]
    assert b.agent.runs == []
    assert b.channel.texts() == []


async def test_stop_through_the_other_replica_stops_the_holders_turn(
    tmp_path: Path, schema: tuple[str, str]
) -> None:
    async with replica(tmp_path, "a", schema) as a, replica(tmp_path, "b", schema) as b:
        a.agent.hold("slow")
        await a.channel.inject(dm("slow first", message_id="1"))
        await a.agent.wait_runs(1)
        await b.channel.inject(dm("queued one", message_id="2"))
        await a.channel.wait_for(queued_reaction_on("2"))
        await b.channel.inject(dm("/stop", message_id="3"))
        await a.channel.wait_text("Stopped the running reply. Dropped 1 queued message.")
        await a.channel.wait_text("⏹️ Stopped.")
        await a.run.kernel.conversations.lanes.wait_idle()
        (queued,) = await a.run.kernel.store.inbound.find("fake", "2")
    assert queued.reason == "stopped"
    assert len(a.agent.runs) == 1
    assert b.agent.runs == []


async def test_interrupt_and_reject_apply_to_messages_through_the_other_replica(
    tmp_path: Path, schema: tuple[str, str]
) -> None:
    interrupt = {"conversations": {"busy_policy": "interrupt"}}
    async with (
        replica(tmp_path, "a", schema, **interrupt) as a,
        replica(tmp_path, "b", schema, **interrupt) as b,
    ):
        a.agent.hold("slow")
        await a.channel.inject(dm("slow first", message_id="1"))
        await a.agent.wait_runs(1)
        await b.channel.inject(dm("second", message_id="2"))
        await a.channel.wait_text("Interrupted")
        await a.channel.wait_text("echo: second")
    assert [run.turn.text for run in a.agent.runs] == ["slow first", "second"]
    reject = {"conversations": {"busy_policy": "reject"}}
    async with (
        replica(tmp_path, "c", schema, **reject) as c,
        replica(tmp_path, "d", schema, **reject) as d,
    ):
        release = c.agent.hold("slow")
        await c.channel.inject(dm("slow again", message_id="11", user="bob"))
        await c.agent.wait_runs(1)
        await d.channel.inject(dm("too soon", message_id="12", user="bob"))
        await c.channel.wait_text("still working on your previous message")
        release.set()
        await c.channel.wait_text("echo: slow again")
        (refused,) = await c.run.kernel.store.inbound.find("fake", "12")
    assert refused.status is InboundStatus.DROPPED
    assert d.agent.runs == []


async def test_a_replica_that_stops_leaves_its_queued_work_to_the_other(
    tmp_path: Path, schema: tuple[str, str]
) -> None:
    async with replica(tmp_path, "b", schema) as b:
        async with replica(tmp_path, "a", schema, daemon={"shutdown_grace_s": 0.1}) as a:
            a.agent.hold("slow")
            await a.channel.inject(dm("slow first", message_id="1"))
            await a.agent.wait_runs(1)
            await a.channel.inject(dm("waiting", message_id="2"))
            await a.channel.wait_for(queued_reaction_on("2"))
        # a stopped: its turn was cancelled for resumption and its queue left in the journal.
        await b.channel.wait_text("echo: slow first", within=10)
        await b.channel.wait_text("waiting", within=10)
        assert b.run.kernel.fleet.ownership.taken_over >= 1
