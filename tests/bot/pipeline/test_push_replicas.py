"""Pushes on a store several replicas share (design §11 "replicas", §19): whichever replica
accepts a push, the chat's holder sends it, once and at once (a wake-up makes its outbox look
at the store); a chat nobody holds is taken by a replica's sweep and its push sent once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.bot.ops.push_support import TOKEN, post
from tests.bot.pipeline.replica_support import Side, replica
from tests.fakes.channel import dm
from tests.fakes.common.waiting import eventually

PUSH_API: dict[str, Any] = {
    "host": "127.0.0.1", "port": 0, "push_api": {"enabled": True, "token": TOKEN},
}  # fmt: skip
ALICE = {"channel": "fake", "chat": "dm-alice"}
WITHIN_S = 15.0
"""Bounds for waits across two replicas on one PostgreSQL on a busy machine (never waited out)."""


async def _held_by(side: Side) -> None:
    """``side`` holds Alice's chat once it answered her."""
    await side.channel.inject(dm("hello", message_id="1"))
    await side.channel.wait_text("echo: hello", within=WITHIN_S)


def _delivered(side: Side, kind: str) -> float:
    value = side.run.kernel.delivery.counters.registry.get_sample_value(
        "switchboard_push_deliveries_total", {"kind": kind, "outcome": "sent"}
    )
    return value or 0.0


async def test_a_push_through_the_other_replica_is_sent_once_by_the_holder_at_once(
    tmp_path: Path, schema: tuple[str, str]
) -> None:
    async with (
        replica(tmp_path, "a", schema, http=PUSH_API) as a,
        replica(tmp_path, "b", schema, http=PUSH_API) as b,
    ):
        await _held_by(a)
        body = {**ALICE, "text": "deploy **done**"}
        status, first, _ = await post(b.run.daemon, body, key="deploy-7")
        assert status == 202, first
        await a.channel.wait_text("deploy **done**", within=WITHIN_S)
        status, again, _ = await post(a.run.daemon, body, key="deploy-7")
        await a.run.kernel.delivery.outbox.wait_idle()
        rows = await a.run.kernel.store.outbox.for_correlation(first["delivery_id"])
    assert status == 202
    assert again["repeated"] is True
    assert again["delivery_id"] == first["delivery_id"]
    assert a.channel.texts() == ["echo: hello", "deploy **done**"]
    assert b.channel.sent == []
    assert len(rows) == 1
    assert _delivered(a, "text") == 1
    assert _delivered(b, "text") == 0


async def test_a_prompt_through_the_other_replica_is_run_and_answered_by_the_holder(
    tmp_path: Path, schema: tuple[str, str]
) -> None:
    async with (
        replica(tmp_path, "a", schema, http=PUSH_API) as a,
        replica(tmp_path, "b", schema, http=PUSH_API) as b,
    ):
        await _held_by(a)
        body = {**ALICE, "run_agent": {"prompt": "summarise the night"}}
        status, answer, _ = await post(b.run.daemon, body, key="nightly")
        assert status == 202, answer
        await a.channel.wait_text("echo: summarise the night", within=WITHIN_S)
        again = await post(b.run.daemon, body, key="nightly")
        await a.run.kernel.conversations.lanes.wait_idle()
        await a.run.kernel.delivery.outbox.wait_idle()
    assert again[1]["repeated"] is True
    assert [run.turn.text for run in a.agent.runs] == ["hello", "summarise the night"]
    assert b.agent.runs == []
    assert a.channel.texts().count("echo: summarise the night") == 1
    assert b.channel.sent == []
    assert _delivered(a, "run_agent") >= 1


async def test_a_push_to_a_chat_nobody_holds_is_sent_once_by_one_replica(
    tmp_path: Path, schema: tuple[str, str]
) -> None:
    async with (
        replica(tmp_path, "a", schema, http=PUSH_API) as a,
        replica(tmp_path, "b", schema, http=PUSH_API) as b,
    ):
        body = {"channel": "fake", "chat": "dm-carol", "chat_type": "dm", "text": "welcome"}
        status, answer, _ = await post(b.run.daemon, body)
        assert status == 202, answer

        def shown() -> list[str]:
            return a.channel.texts() + b.channel.texts()

        await eventually(lambda: shown() == ["welcome"], within=WITHIN_S)
        await a.run.kernel.delivery.outbox.wait_idle()
        await b.run.kernel.delivery.outbox.wait_idle()
    assert shown() == ["welcome"]


async def test_a_push_to_a_chat_whose_holder_stopped_is_sent_by_the_other(
    tmp_path: Path, schema: tuple[str, str]
) -> None:
    async with replica(tmp_path, "b", schema, http=PUSH_API) as b:
        async with replica(tmp_path, "a", schema, http=PUSH_API) as a:
            await _held_by(a)
        assert await b.held() == 0
        status, answer, _ = await post(b.run.daemon, {**ALICE, "text": "still there?"})
        assert status == 202, answer
        await b.channel.wait_text("still there?", within=WITHIN_S)
        await b.run.kernel.delivery.outbox.wait_idle()
    assert b.channel.texts() == ["still there?"]
    assert a.channel.texts() == ["echo: hello"]
