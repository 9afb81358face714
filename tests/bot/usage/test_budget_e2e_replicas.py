"""A global daily budget held by two replicas sharing PostgreSQL (design §25): both read one
total, so together they stay within it, up to the runs already in flight when it is reached.

The bound, precisely. Every turn here makes one model call reporting exactly ``U`` tokens;
the budget is ``N`` tokens a day for everyone. A message is admitted (before its turn starts)
only if the day's total it reads is below ``N``, and a call's usage is recorded as the call
returns. With ``k = ceil(N / U)``, the ``k``-th recorded call reaches the limit. Every run
admitted before that read at most ``(k - 1) * U``; every message after it reads ``>= N`` and
is refused without a model call. So what counts is the ``k - 1`` calls recorded before the
limit plus the ``F`` runs in flight when it was reached (admitted, not yet recorded; the
``k``-th among them): ``total = (k - 1 + F) * U``. Each conversation here sends its next
message only once the previous one is answered or refused, so at most one run per
conversation is in flight: ``F <= C`` and ``N <= total <= (k - 1 + C) * U``.

The first day attains the bound exactly (``k - 1`` turns, then all ``C`` conversations in
flight at once, their calls held until all are admitted); the next day ``C`` conversations
race across both replicas until each is refused.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.ports.usage import UsageFilter, usage_of
from tests.bot.harness import Running
from tests.bot.usage.e2e_support import (
    MovableClock,
    Planned,
    TurnModel,
    checked_calls,
    replicas,
    reply_to,
)
from tests.fakes.channel import FakeChannel, dm

USERS = tuple(f"u{n}" for n in range(6))
C = len(USERS)
U = 100
USES = "[uses=80+20]"
"""``U`` tokens a call."""
SHARE = 2
"""Turns each user has answered on the first day before they all write at once."""
N = SHARE * C * U + U // 2
"""So ``k - 1 = SHARE * C``: the first day's turns before the rush stay below the limit."""
K = math.ceil(N / U)
BOUND = (K - 1 + C) * U
GLOBAL = {"scope": "global", "per": "day", "tokens": N}
DAY_ONE = datetime(2026, 5, 4, 12, 0, tzinfo=UTC)
REFUSED = "⛔ The bot has used "
SPENT_ON_DAY_ONE = (
    f"{REFUSED}{BOUND:,} of its {N:,} tokens for today. It resets at 00:00 UTC (in 12 h)."
    " To raise it, ask an admin of this bot."
)


@pytest.fixture
def model() -> Iterator[TurnModel]:
    with TurnModel() as fake:
        yield fake


async def say(channels: list[FakeChannel], number: int, user: str, via: int) -> str:
    """User ``user``'s turn ``number`` in their DM, reaching replica ``via``; its reply."""
    said = Planned(number=number, channel="fake", chat_id=f"dm-{user}", user_id=user, tags=USES)
    await channels[via % 2].inject(dm(said.text, message_id=f"m{number}", user=user))
    return await reply_to(channels, f"m{number}")


async def day_total(runs: list[Running], since: datetime) -> tuple[int, int]:
    """Tokens and model calls since ``since``, as the shared store sums them."""
    usage = usage_of(runs[0].kernel.store)
    assert usage is not None
    (total,) = await usage.totals(UsageFilter(since=since))
    return total.tokens, total.calls


async def spend(channels: list[FakeChannel], user: int, turns: int) -> list[str]:
    """User ``user``'s first ``turns`` turns, one after the other; their replies."""
    numbers = range(1000 + 20 * user, 1000 + 20 * user + turns)
    return [await say(channels, turn, USERS[user], via=turn + user) for turn in numbers]


async def everyone_in_flight(channels: list[FakeChannel], model: TurnModel) -> list[str]:
    """``k - 1`` turns (each user's ``SHARE`` in turn, users at once), then one turn of each user
    at once, held at the model until all ``C`` are admitted; then each user's next message.
    Every reply, in that order."""
    async with asyncio.TaskGroup() as users:
        spent = [
            users.create_task(spend(channels, n, SHARE), name=f"spend:{USERS[n]}") for n in range(C)
        ]
    replies = [reply for task in spent for reply in task.result()]
    waiting_before = len(model.waited())
    model.hold(*range(10, 10 + C))
    async with asyncio.TaskGroup() as users:
        held = [
            users.create_task(say(channels, 10 + n, user, via=n), name=f"held:{user}")
            for n, user in enumerate(USERS)
        ]
        await asyncio.to_thread(model.wait_waiting, waiting_before + C, 20)
        model.release()
    replies += [task.result() for task in held]
    return replies + [await say(channels, 20 + n, u, via=n + 1) for n, u in enumerate(USERS)]


async def race(channels: list[FakeChannel], user: int) -> list[str]:
    """One user's turns, each through the other replica, until one is refused."""
    replies: list[str] = []
    for turn in range(100 + 20 * user, 120 + 20 * user):
        replies.append(await say(channels, turn, USERS[user], via=turn))
        if replies[-1].startswith(REFUSED):
            return replies
    raise AssertionError(f"user {USERS[user]} was never refused: {replies}")


async def test_two_replicas_stay_within_a_global_budget_but_for_the_runs_in_flight(
    tmp_path: Path, schema: tuple[str, str], model: TurnModel
) -> None:
    clock = MovableClock(DAY_ONE)
    async with replicas(tmp_path, schema, model, usage={"budgets": [GLOBAL]}, clock=clock) as (
        runs,
        channels,
    ):
        first_day = await everyone_in_flight(channels, model)
        first_total = await day_total(runs, DAY_ONE.replace(hour=0))
        calls_first_day = len(checked_calls(model))
        clock.now = DAY_ONE + timedelta(days=1)
        async with asyncio.TaskGroup() as users:
            raced = [users.create_task(race(channels, n), name=f"race:{n}") for n in range(C)]
        next_total = await day_total(runs, clock.now.replace(hour=0))
    answered = [reply for reply in first_day if not reply.startswith(REFUSED)]
    assert len(answered) == K - 1 + C
    assert first_total == (BOUND, K - 1 + C)  # the bound, attained: all C were in flight
    assert first_day[K - 1 + C :] == [SPENT_ON_DAY_ONE] * C
    assert calls_first_day == K - 1 + C  # the refused made no model call
    answered_next = sum(len(replies) - 1 for replies in (task.result() for task in raced))
    tokens, calls = next_total
    assert N <= tokens <= BOUND
    assert (tokens, calls) == (answered_next * U, answered_next)
    assert len(checked_calls(model)) == calls_first_day + answered_next
    assert all(channel.texts() for channel in channels)  # both replicas answered
