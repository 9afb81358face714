"""The per-user message rate against the real store (design §25): counted per minute across
chats, told once a minute, admins exempt, and one count for every replica of PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.usage.budgets import Requester
from bot.usage.config import UsageSettings
from bot.usage.rate import MessageRate
from store.postgres import PostgresStore
from store.sqlite import SqliteStore
from tests.postgres import fresh_schema, require_postgres
from tests.store.support import ManualClock

NOON = datetime(2026, 3, 10, 12, 31, 19, tzinfo=UTC)


def sender(user: str, chat: str = "g1", *, admin: bool = False) -> Requester:
    return Requester(channel="telegram", account_id="", chat_id=chat, user_id=user, is_admin=admin)


def rate(store: SqliteStore | PostgresStore, clock: ManualClock, **fields: Any) -> MessageRate:
    settings = UsageSettings.model_validate(fields)
    return MessageRate(lambda: settings, store.usage, clock)


@pytest.fixture
async def sqlite(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    async with SqliteStore(tmp_path / "switchboard.db") as store:
        yield store


async def test_a_flood_is_refused_past_the_limit_and_told_once_a_minute(
    sqlite: SqliteStore,
) -> None:
    clock = ManualClock(NOON)
    limited = rate(sqlite, clock, messages_per_minute=2)
    assert await limited.check(sender("alice", "g1")) is None
    assert await limited.check(sender("alice", "dm-alice")) is None
    third = await limited.check(sender("alice", "g2"))  # the limit holds across chats
    assert third is not None
    assert (third.count, third.limit, third.again_at) == (
        3,
        2,
        datetime(2026, 3, 10, 12, 32, tzinfo=UTC),
    )
    assert third.text == (
        "⏳ You can send 2 messages a minute to this bot (in all chats together), and you have"
        " sent more: I'm not answering until the minute is over. Write again at 12:32 UTC"
        " (in 41 s)."
    )
    clock.advance(30)
    fourth = await limited.check(sender("alice", "g1"))
    assert fourth is not None
    assert fourth.text is None  # told already this minute
    assert await limited.check(sender("bob", "g1")) is None
    clock.advance(20)  # 12:32:09, a new minute
    assert await limited.check(sender("alice", "g1")) is None


async def test_admins_are_exempt_unless_the_usage_section_says_otherwise(
    sqlite: SqliteStore,
) -> None:
    clock = ManualClock(NOON)
    exempt = rate(sqlite, clock, messages_per_minute=1)
    root = sender("root", admin=True)
    assert [await exempt.check(root) for _ in range(3)] == [None, None, None]
    held = rate(sqlite, clock, messages_per_minute=1, exempt_admins=False)
    assert await held.check(root) is None
    assert await held.check(root) is not None


async def test_no_limit_counts_nothing(sqlite: SqliteStore) -> None:
    clock = ManualClock(NOON)
    assert await rate(sqlite, clock).check(sender("alice")) is None
    minute = NOON.replace(second=0)
    assert await sqlite.usage.hit("telegram", "alice", minute) == 1  # the check counted none


async def test_two_replicas_on_postgresql_count_one_rate_and_each_tells_once() -> None:
    url = require_postgres()
    clock = ManualClock(NOON)
    async with (
        fresh_schema(url) as schema,
        PostgresStore(url, schema=schema) as one,
        PostgresStore(url, schema=schema) as two,
    ):
        first, second = (
            rate(one, clock, messages_per_minute=2),
            rate(two, clock, messages_per_minute=2),
        )
        assert await first.check(sender("alice", "g1")) is None
        assert await second.check(sender("alice", "g2")) is None
        on_one = await first.check(sender("alice", "g1"))
        on_two = await second.check(sender("alice", "g2"))
        again_on_two = await second.check(sender("alice", "g2"))
    assert on_one is not None
    assert on_two is not None
    assert again_on_two is not None
    assert (on_one.count, on_two.count, again_on_two.count) == (3, 4, 5)
    assert on_one.text is not None
    assert on_two.text is not None  # each replica remembers only whom it told
    assert again_on_two.text is None
