"""One send budget per bot across the replicas of a shared store (design §8 "rate limits")."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from bot.delivery.budget import SendBudget, share_of
from bot.delivery.ratelimit import RateLimiter
from bot.records import ChatRef, Replica
from store.postgres import PostgresStore
from tests.postgres import fresh_schema, require_postgres
from tests.store.support import START

EXPIRY_S = 15.0
BOT_RATE = 30.0


def test_each_replica_keeps_the_part_its_chats_weigh_and_the_parts_add_up() -> None:
    loads = {"a": 6, "b": 3, "c": 0}
    shares = {name: share_of(loads, name) for name in loads}
    assert shares == {"a": 0.6, "b": 0.3, "c": 0.1}
    assert share_of({}, "new") == 1.0  # alone, or not listed yet
    assert share_of({"a": 4}, "new") == pytest.approx(0.2)


def _sends_within(limiter: RateLimiter, chats: int, seconds: float) -> int:
    """How many finals to ``chats`` private chats the limiter lets go in the first ``seconds``."""
    return sum(
        limiter.reserve(("telegram", "", f"dm{n}"), group=False) < seconds for n in range(chats)
    )


def test_replicas_sending_at_once_stay_within_the_bot_wide_rate_together() -> None:
    now = [0.0]
    limiters = [RateLimiter(clock=lambda: now[0]) for _ in range(3)]
    for limiter, share in zip(limiters, (0.5, 0.25, 0.25), strict=True):
        limiter.configure("telegram", per_chat_interval_s=1.0, global_rate_per_s=BOT_RATE)
        limiter.set_share(share)
    together = sum(_sends_within(limiter, 200, 2.0) for limiter in limiters)
    alone = RateLimiter(clock=lambda: now[0])
    alone.configure("telegram", per_chat_interval_s=1.0, global_rate_per_s=BOT_RATE)
    # the bot's burst (one second's worth) and two seconds at its rate, as one process has
    assert together <= _sends_within(alone, 200, 2.0) + 3  # one send of rounding a replica
    assert together >= 2 * BOT_RATE


@pytest.fixture
async def store() -> AsyncIterator[PostgresStore]:
    url = require_postgres()
    async with fresh_schema(url) as schema, PostgresStore(url, schema=schema) as opened:
        yield opened


async def _register(store: PostgresStore, replica_id: str) -> None:
    await store.replicas.register(
        Replica(
            id=replica_id, host="h", pid=1, version="0", backend="postgres",
            started_at=START, heartbeat_at=START,
        )
    )  # fmt: skip


async def test_the_budget_follows_the_chats_each_live_replica_holds(store: PostgresStore) -> None:
    for name in ("a", "b"):
        await _register(store, name)
    chats = [ChatRef("telegram", "", f"c{n}") for n in range(4)]
    await store.leases.adopt("a", START, EXPIRY_S, chats[:3])
    await store.leases.adopt("b", START, EXPIRY_S, chats[3:])
    limiter = RateLimiter()
    limiter.configure("telegram", per_chat_interval_s=1.0, global_rate_per_s=BOT_RATE)
    budget = SendBudget(
        store.leases, limiter, replica_id="b", expiry_s=lambda: EXPIRY_S, clock=lambda: START
    )

    await budget.refresh()
    assert limiter.share == pytest.approx(0.25)

    later = START + timedelta(seconds=EXPIRY_S + 1)  # a's heartbeat lapsed: b sends alone
    await store.replicas.heartbeat("b", later)
    budget = SendBudget(
        store.leases, limiter, replica_id="b", expiry_s=lambda: EXPIRY_S, clock=lambda: later
    )
    await budget.refresh()
    assert limiter.share == 1.0
