"""A mute holds on every replica of one PostgreSQL store (design §22): the replica that takes a
chat over reads its mutes anew, even when it looked at the store's mutes just before."""

from __future__ import annotations

from pathlib import Path

from tests.bot.harness import routed
from tests.bot.pipeline.replica_support import replica
from tests.fakes.channel import dm

WITHIN_S = 15.0
"""Bounds for waits across two replicas on a busy machine (never waited out)."""


async def test_a_chat_taken_over_right_after_its_mute_stays_muted(
    tmp_path: Path, schema: tuple[str, str]
) -> None:
    async with replica(tmp_path, "b", schema) as b:
        await b.channel.inject(dm("hello", message_id="b1", user="bob"))
        await b.channel.wait_text("echo: hello", within=WITHIN_S)  # b has read the mutes
        async with replica(tmp_path, "a", schema) as a:
            await a.channel.inject(dm("hi", message_id="a1"))
            await a.channel.wait_text("echo: hi", within=WITHIN_S)  # a holds Alice's chat
            await a.channel.inject(dm("/mute", message_id="a2"))
            await a.channel.wait_text("🔇 Muted", within=WITHIN_S)
        # a stopped cleanly: Alice's next message reaches b, which takes her chat over
        await b.channel.inject(dm("are you there?", message_id="b2"))
        await routed(b.run.kernel, 2, within=WITHIN_S)
        (entry,) = await b.run.kernel.store.inbound.find("fake", "b2")
        await b.run.kernel.delivery.outbox.wait_idle()
    assert (str(entry.status), entry.reason) == ("handled", "muted")
    assert [run.turn.text for run in b.agent.runs] == ["hello"]
    assert "echo: are you there?" not in b.channel.texts()
