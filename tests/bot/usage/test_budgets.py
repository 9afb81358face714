"""Budgets against the real usage store (design §25): the period in ``usage.timezone``, the
scopes and their replies, admins exempt, and one total for every replica of a PostgreSQL store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from bot.ports.usage import UsageRecord
from bot.usage.budgets import Budgets, Refusal, Requester, period_of
from bot.usage.config import UsageSettings
from store.postgres import PostgresStore
from store.sqlite import SqliteStore
from tests.postgres import fresh_schema, require_postgres
from tests.store.support import ManualClock

MORNING = datetime(2026, 3, 10, 6, 48, tzinfo=UTC)
ALICE = Requester(channel="telegram", account_id="", chat_id="g1", user_id="alice", is_admin=False)
BOB = Requester(channel="telegram", account_id="", chat_id="g1", user_id="bob", is_admin=False)
ROOT = Requester(channel="telegram", account_id="", chat_id="g1", user_id="root", is_admin=True)


def usage(**fields: Any) -> UsageSettings:
    return UsageSettings.model_validate(fields)


def row(  # noqa: PLR0913 - one row's dimensions and amounts, each with its default
    at: datetime,
    *,
    user: str = "alice",
    chat: str = "g1",
    channel: str = "telegram",
    tokens_in: int = 0,
    tokens_out: int = 0,
    cost: float = 0.0,
) -> UsageRecord:
    return UsageRecord(
        at=at,
        channel=channel,
        account_id="",
        chat_id=chat,
        user_id=user,
        thread_id="t1",
        model="gpt-test",
        correlation_id=f"{channel}/{chat}/{user}/{at.isoformat()}",
        calls=1,
        unreported_calls=0,
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        cached_tokens=0,
        cost=cost,
    )


@pytest.fixture
async def sqlite(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    async with SqliteStore(tmp_path / "switchboard.db") as store:
        yield store


def budgets(store: SqliteStore | PostgresStore, clock: ManualClock, **fields: Any) -> Budgets:
    settings = usage(**fields)
    return Budgets(lambda: settings, store.usage, clock)


async def test_a_user_at_the_daily_limit_is_refused_until_the_next_day(sqlite: SqliteStore) -> None:
    clock = ManualClock(MORNING)
    held = budgets(sqlite, clock, budgets=[{"scope": "user", "per": "day", "tokens": 200_000}])
    yesterday = MORNING - timedelta(hours=8)
    await sqlite.usage.record([row(yesterday, tokens_in=900_000)])
    await sqlite.usage.record([row(MORNING - timedelta(hours=1), tokens_in=150_000)])
    assert await held.check(ALICE) is None
    await sqlite.usage.record([row(MORNING, tokens_in=40_000, tokens_out=10_412)])
    refusal = await held.check(ALICE)
    assert refusal == Refusal(
        scope="user",
        per="day",
        measure="tokens",
        limit=200_000,
        used=200_412,
        resets_at=datetime(2026, 3, 11, tzinfo=UTC),
        text="⛔ You have used 200,412 of your 200,000 tokens for today. It resets at 00:00 UTC"
        " (in 17 h 12 min). To raise it, ask an admin of this bot.",
    )
    other = Requester(
        channel="telegram", account_id="", chat_id="g1", user_id="bob", is_admin=False
    )
    assert await held.check(other) is None
    clock.now = datetime(2026, 3, 11, 0, 0, 1, tzinfo=UTC)
    assert await held.check(ALICE) is None


async def test_days_begin_at_midnight_in_the_configured_zone(sqlite: SqliteStore) -> None:
    """In Berlin (UTC+1 in March) the day began at 23:00 UTC, so last night's 23:30 counts."""
    clock = ManualClock(MORNING)
    held = budgets(
        sqlite,
        clock,
        timezone="Europe/Berlin",
        contact="@ops in #bot-help",
        budgets=[{"scope": "user", "per": "day", "tokens": 1000}],
    )
    await sqlite.usage.record([row(datetime(2026, 3, 9, 22, 30, tzinfo=UTC), tokens_in=5000)])
    assert await held.check(ALICE) is None
    await sqlite.usage.record([row(datetime(2026, 3, 9, 23, 30, tzinfo=UTC), tokens_in=1000)])
    refusal = await held.check(ALICE)
    assert refusal is not None
    assert refusal.resets_at == datetime(2026, 3, 10, 23, 0, tzinfo=UTC)
    assert "It resets at 00:00 CET (in 16 h 12 min). To raise it, ask @ops in #bot-help." in (
        refusal.text
    )


def test_a_month_runs_from_the_first_to_the_first_of_the_next() -> None:
    zone = ZoneInfo("America/New_York")
    december = period_of(datetime(2026, 12, 31, 23, 0, tzinfo=UTC), "month", zone)
    assert december.start == datetime(2026, 12, 1, 5, 0, tzinfo=UTC)
    assert december.end == datetime(2027, 1, 1, 5, 0, tzinfo=UTC)
    day = period_of(datetime(2026, 3, 8, 12, 0, tzinfo=UTC), "day", zone)
    assert day.end - day.start == timedelta(hours=23)  # the clocks went forward that day


async def test_chat_channel_and_global_budgets_say_whose_limit_it_is(sqlite: SqliteStore) -> None:
    clock = ManualClock(MORNING)
    await sqlite.usage.record(
        [
            row(MORNING, user="bob", tokens_in=600),
            row(MORNING, user="alice", chat="dm-alice", tokens_in=500),
            row(MORNING, user="carol", chat="c9", channel="slack", tokens_out=400),
        ]
    )

    async def refused(budget: dict[str, Any], who: Requester = ALICE) -> str | None:
        found = await budgets(sqlite, clock, budgets=[budget]).check(who)
        return None if found is None else found.text.split(" It resets")[0]

    chat = {"scope": "chat", "per": "day", "tokens": 600}
    assert await refused(chat) == "⛔ This chat has used 600 of its 600 tokens for today."
    channel = {"scope": "channel", "per": "month", "tokens": 1100}
    assert await refused(channel) == (
        "⛔ The bot has used 1,100 of its 1,100 tokens on Telegram for this month."
    )
    everyone = {"scope": "global", "per": "month", "tokens": 1500}
    assert (
        await refused(everyone) == "⛔ The bot has used 1,500 of its 1,500 tokens for this month."
    )
    slack_only = {"scope": "global", "per": "day", "tokens": 400, "channel": "slack"}
    assert await refused(slack_only) is None  # Telegram's messages are not held by it
    carol = Requester(channel="slack", account_id="", chat_id="c9", user_id="carol", is_admin=False)
    assert await refused(slack_only, carol) == (
        "⛔ The bot has used 400 of its 400 tokens on Slack for today."
    )


async def test_a_month_budget_names_the_date_it_resets(sqlite: SqliteStore) -> None:
    clock = ManualClock(MORNING)
    await sqlite.usage.record([row(MORNING, tokens_in=10)])
    held = budgets(sqlite, clock, budgets=[{"scope": "user", "per": "month", "tokens": 10}])
    refusal = await held.check(ALICE)
    assert refusal is not None
    assert refusal.resets_at == datetime(2026, 4, 1, tzinfo=UTC)
    assert "It resets on 1 April at 00:00 UTC (in 21 d 17 h)." in refusal.text


async def test_a_cost_budget_counts_cost_not_tokens(sqlite: SqliteStore) -> None:
    clock = ManualClock(MORNING)
    held = budgets(sqlite, clock, budgets=[{"scope": "user", "per": "day", "cost": 2.5}])
    await sqlite.usage.record([row(MORNING, tokens_in=10_000_000, cost=1.25)])
    assert await held.check(ALICE) is None
    await sqlite.usage.record([row(MORNING, tokens_out=10, cost=1.5)])
    refusal = await held.check(ALICE)
    assert refusal is not None
    assert (refusal.measure, refusal.used) == ("cost", 2.75)  # costs are summed exactly
    assert refusal.text.startswith("⛔ You have used 2.75 of your 2.50 in model costs for today.")


async def test_admins_are_exempt_unless_a_budget_says_otherwise(sqlite: SqliteStore) -> None:
    clock = ManualClock(MORNING)
    await sqlite.usage.record([row(MORNING, user="root", tokens_in=100)])
    daily = {"scope": "user", "per": "day", "tokens": 100}
    assert await budgets(sqlite, clock, budgets=[daily]).check(ROOT) is None
    binding = budgets(sqlite, clock, budgets=[{**daily, "exempt_admins": False}])
    assert await binding.check(ROOT) is not None
    none_exempt = budgets(sqlite, clock, exempt_admins=False, budgets=[daily])
    assert await none_exempt.check(ROOT) is not None


async def test_standings_list_every_budget_that_holds_with_what_is_used(
    sqlite: SqliteStore,
) -> None:
    clock = ManualClock(MORNING)
    await sqlite.usage.record([row(MORNING, tokens_in=30, tokens_out=20)])
    held = budgets(
        sqlite,
        clock,
        budgets=[
            {"scope": "user", "per": "day", "tokens": 100},
            {"scope": "global", "per": "month", "tokens": 50},
            {"scope": "user", "per": "day", "tokens": 1, "channel": "slack"},
        ],
    )
    standings = await held.standings(ALICE)
    assert [(s.budget.scope, s.used, s.exhausted) for s in standings] == [
        ("user", 50, False),
        ("global", 50, True),
    ]
    assert standings[0].describe() == "50 of 100 tokens"
    refusal = await held.check(ALICE)
    assert refusal is not None
    assert refusal.scope == "global"


async def test_two_replicas_on_postgresql_hold_one_global_total() -> None:
    """Each replica records its own turns; either one refuses once their sum is spent."""
    url = require_postgres()
    clock = ManualClock(MORNING)
    budget = {"scope": "global", "per": "day", "tokens": 1000}
    async with (
        fresh_schema(url) as schema,
        PostgresStore(url, schema=schema) as one,
        PostgresStore(url, schema=schema) as two,
    ):
        first, second = budgets(one, clock, budgets=[budget]), budgets(two, clock, budgets=[budget])
        await one.usage.record([row(MORNING, user="alice", tokens_in=600)])
        assert await second.check(ALICE) is None
        await two.usage.record([row(MORNING, user="bob", chat="g2", tokens_out=400)])
        on_one, on_two = await first.check(ALICE), await second.check(ALICE)
    assert on_one is not None
    assert on_two is not None
    assert on_one.used == on_two.used == 1000
