"""Rebalancing between two daemons on one PostgreSQL schema, in one process (design §11
"replicas"): a replica that joins gets a fair share of the chats, ceil(chats / replicas), handed
over by the replica holding too many, idle chats only; a chat with a turn running stays until
the turn is done, and every message afterwards is answered once, in order, by the new holder
(though it reaches the replica that had the chat, as with Telegram polling on one replica)."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from pydantic import ValidationError

from bot.fleet.rebalance import fair_share_moves
from bot.messages import OutboundKind
from tests.bot.harness import make_settings
from tests.bot.pipeline.replica_support import Side, replica
from tests.fakes.channel import dm
from tests.fakes.common.waiting import eventually

WITHIN_S = 20.0
"""Bound on a move: the quiet time after a chat's last message, then a sweep (about 1 s)."""


async def owners(schema: tuple[str, str]) -> dict[str, str]:
    """Chat id → the replica holding it, as the store has it."""
    url, schema_name = schema
    query = sql.SQL("SELECT chat_id, owner FROM {}.chat_leases").format(sql.Identifier(schema_name))
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cursor = await conn.execute(query)
        return {str(chat): str(owner) for chat, owner in await cursor.fetchall()}


def answers(side: Side, fragment: str) -> list[str]:
    """The final texts ``side`` posted containing ``fragment``, in order."""
    return [
        s.text
        for s in side.channel.sent
        if fragment in s.text and not s.is_progress and not s.repeat
        and getattr(s.delivery, "kind", None) is not OutboundKind.NOTICE
    ]  # fmt: skip


async def test_a_replica_that_joins_gets_its_share_of_idle_chats_and_busy_ones_wait(
    tmp_path: Path, schema: tuple[str, str]
) -> None:
    async with replica(tmp_path, "a", schema) as a:
        await a.channel.inject(dm("hello", message_id="1", user="quiet"))
        await a.channel.wait_text("echo: hello")
        releases = {n: a.agent.hold(f"slow{n}") for n in (1, 2, 3)}
        for n in (1, 2, 3):
            await a.channel.inject(dm(f"slow{n} please", message_id=f"s{n}", user=f"busy{n}"))
        await a.agent.wait_runs(4)
        assert await a.held() == 4  # alone: every chat is a's
        async with replica(tmp_path, "b", schema) as b:
            # Fair share: ceil(4 / 2) = 2. Only the quiet chat is idle, so it moves alone.
            await eventually(lambda: _waits(b, 1), within=WITHIN_S, every=0.05)
            # The rest are busy.
            assert await a.run.kernel.fleet.ownership.rebalancer.rebalance() == []
            assert await owners(schema) == {
                "dm-quiet": b.replica_id, "dm-busy1": a.replica_id,
                "dm-busy2": a.replica_id, "dm-busy3": a.replica_id,
            }  # fmt: skip
            releases[1].set()
            await a.channel.wait_text("echo: slow1 please")
            await eventually(lambda: _waits(b, 2), within=WITHIN_S, every=0.05)
            assert (await owners(schema))["dm-busy1"] == b.replica_id
            # Messages still reach a (say, the Telegram poller); b, the holder, answers them.
            for user in ("quiet", "busy1"):
                await a.channel.inject(dm(f"after {user} 1", message_id=f"{user}-1", user=user))
                await a.channel.inject(dm(f"after {user} 2", message_id=f"{user}-2", user=user))
            for user in ("quiet", "busy1"):
                await b.channel.wait_text(f"after {user} 2", within=10)
            releases[2].set()
            releases[3].set()
            await a.channel.wait_text("echo: slow2 please")
            await a.channel.wait_text("echo: slow3 please")
            await a.run.kernel.conversations.lanes.wait_idle()
            await b.run.kernel.conversations.lanes.wait_idle()
            assert (await a.held(), await b.held()) == (2, 2)  # both at the fair share
        assert a.run.kernel.fleet.ownership.rebalancer.handed_over == 2
        assert _rebalanced(a) == 2
    for user in ("quiet", "busy1"):
        asked = [run.turn.text for run in b.agent.runs if user in run.turn.text]
        assert "\n\n".join(asked) == f"after {user} 1\n\nafter {user} 2"  # once each, in order
        said = "\n\n".join(answers(b, f"after {user}"))
        assert said.index(f"after {user} 1") < said.index(f"after {user} 2")
        assert answers(a, f"after {user}") == []
    assert sorted(run.turn.text for run in a.agent.runs) == [
        "hello", "slow1 please", "slow2 please", "slow3 please",
    ]  # fmt: skip
    assert b.run.kernel.fleet.ownership.taken_over == 0  # handed over, not taken from the dead


async def _waits(side: Side, count: int) -> bool:
    return await side.held() == count


def _rebalanced(side: Side) -> int:
    (metric,) = side.run.kernel.delivery.counters.replicas.chats_rebalanced.collect()
    return int(next(s.value for s in metric.samples if s.name.endswith("_total")))


@pytest.mark.parametrize(
    ("loads", "bound", "targets"),
    [
        ({"a": 4, "b": 0}, 5, ["b", "b"]),  # share ceil(4 / 2) = 2
        ({"a": 4, "b": 0}, 1, ["b"]),  # a bounded number per sweep
        ({"a": 5, "b": 0}, 5, ["b", "b"]),  # share 3: a keeps 3
        ({"a": 7, "b": 2, "c": 0}, 5, ["c", "c", "b", "c"]),  # share 3, least loaded first
        ({"a": 3, "b": 2, "c": 2}, 5, []),  # share 3: nobody is above it
        ({"a": 4}, 5, []),  # alone
        ({"b": 4}, 5, []),  # a is not live (its heartbeat is late): it moves nothing
        ({"a": 6, "b": 0}, 0, []),  # rebalancing off
    ],
)
def test_the_fair_share_is_the_ceiling_and_chats_go_to_the_least_loaded(
    loads: dict[str, int], bound: int, targets: list[str]
) -> None:
    assert fair_share_moves(loads, "a", bound) == targets


def test_the_moves_per_sweep_are_validated(tmp_path: Path) -> None:
    assert make_settings(tmp_path).daemon.rebalance_moves == 2
    assert make_settings(tmp_path, daemon={"rebalance_moves": 0}).daemon.rebalance_moves == 0
    for wrong in (-1, 101, "many"):
        with pytest.raises(ValidationError, match="rebalance_moves"):
            make_settings(tmp_path, daemon={"rebalance_moves": wrong})
