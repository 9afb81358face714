"""Usage on two replicas sharing PostgreSQL (design §25, §11 "replicas"): six users' turns,
each message reaching one replica or the other and run by the one that holds its chat, sum in
the shared store to exactly what the model reported, per user, chat, channel and model."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.ports.usage import UsageDimension, UsageFilter, usage_of
from tests.bot.usage.e2e_support import (
    MINI_TAG,
    QUIET,
    TOOL,
    Planned,
    TurnModel,
    by_group,
    checked_calls,
    expected_totals,
    replicas,
    reply_to,
)
from tests.fakes.channel import FakeChannel, dm

USERS = tuple(f"u{n}" for n in range(6))
TURNS = 30
DIMENSIONS: tuple[UsageDimension | None, ...] = (None, "user", "chat", "channel", "model")


def the_plan() -> dict[int, Planned]:
    """Turn ``n`` is user ``n % 6``'s, in their DM; some call a tool, some go unreported,
    some name the second model."""

    def tags(n: int) -> str:
        return TOOL if n % 7 == 3 else QUIET if n % 11 == 4 else MINI_TAG if n % 5 == 2 else ""

    return {
        n: Planned(
            number=n,
            channel="fake",
            chat_id=f"dm-{USERS[n % len(USERS)]}",
            user_id=USERS[n % len(USERS)],
            tags=tags(n),
        )
        for n in range(TURNS)
    }


@pytest.fixture
def model() -> Iterator[TurnModel]:
    with TurnModel() as fake:
        yield fake


async def converse(channels: list[FakeChannel], turns: list[Planned]) -> None:
    """One user's turns, each once the previous one is answered; the first reaches replica
    ``n % 2`` (which then holds the chat), and later ones alternate between the two."""
    for turn in turns:
        reached = channels[(turn.number + turn.number // len(USERS)) % 2]
        message_id = f"m{turn.number}"
        await reached.inject(dm(turn.text, message_id=message_id, user=turn.user_id))
        assert await reply_to(channels, message_id) == turn.answer


async def test_turns_spread_over_two_replicas_sum_to_what_the_model_reported(
    tmp_path: Path, schema: tuple[str, str], model: TurnModel
) -> None:
    plan = the_plan()
    async with replicas(tmp_path, schema, model) as (runs, channels):
        async with asyncio.TaskGroup() as users:
            for user in USERS:
                turns = [turn for turn in plan.values() if turn.user_id == user]
                users.create_task(converse(channels, turns), name=f"user:{user}")
        usage = usage_of(runs[0].kernel.store)
        assert usage is not None
        stored = {by: by_group(await usage.totals(UsageFilter(), by=by)) for by in DIMENSIONS}
    calls = checked_calls(model)
    assert len(calls) == TURNS + sum(TOOL in turn.tags for turn in plan.values())
    assert stored == {by: expected_totals(calls, plan, by) for by in DIMENSIONS}
    assert stored[None][""].turns == TURNS
    assert all(channel.texts() for channel in channels)  # both replicas answered turns
