"""``/usage`` and ``/admin usage`` in the running daemon (design §25, §9): a user's own day and
month with the limits that hold them; the month's top users and chats for admins, and one
user's or chat's usage; refused to others, audited, listed by ``/help``."""

from __future__ import annotations

from pathlib import Path

from bot.messages import utc_now
from bot.ports import Store
from bot.ports.usage import UsageRecord, usage_of
from tests.bot.harness import make_settings, running
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import FakeChannel, dm

USAGE = {
    "prices": {"fake-model": {"input": 2.0, "output": 8.0}},
    "budgets": [
        {"scope": "user", "per": "day", "tokens": 200_000},
        {"scope": "global", "per": "month", "cost": 100.0, "exempt_admins": False},
        {"scope": "user", "per": "day", "tokens": 1, "channel": "slack"},  # not here
    ],
}


async def spend(  # noqa: PLR0913 - one turn's dimensions and amounts
    store: Store, user: str, chat: str, tokens_in: int, tokens_out: int, *, unreported: int = 0
) -> None:
    usage = usage_of(store)
    assert usage is not None
    at = utc_now()
    cost = (tokens_in * 2.0 + tokens_out * 8.0) / 1_000_000
    await usage.record(
        [
            UsageRecord(
                at=at,
                channel="fake",
                account_id="",
                chat_id=chat,
                user_id=user,
                thread_id="t1",
                model="fake-model",
                correlation_id=f"{user}-{chat}-{at.timestamp()}",
                calls=1 + unreported,
                unreported_calls=unreported,
                input_tokens=tokens_in,
                output_tokens=tokens_out,
                cached_tokens=0,
                cost=cost,
            )
        ]
    )


async def test_usage_shows_your_day_and_month_and_the_limits_that_hold_you(
    tmp_path: Path,
) -> None:
    settings = make_settings(tmp_path, usage=USAGE)
    channel = FakeChannel()
    async with running(settings, [channel], FakeAgent()) as daemon:
        store = daemon.kernel.store
        await spend(store, "alice", "dm-alice", 1000, 204, unreported=1)
        await spend(store, "alice", "g1", 3000, 500)
        await spend(store, "bob", "g1", 90_000, 10_000)
        await channel.inject(dm("/usage", message_id="1"))
        mine = await channel.wait_text("Your usage")
        await channel.inject(dm("/usage", message_id="2", user="root"))
        roots = await channel.wait_text("As an admin you are exempt from 1 of the limits.")
        await channel.inject(dm("/usage please", message_id="3"))
        await channel.wait_text("Usage: `/usage` (it takes no arguments).")
    lines = mine.text.splitlines()
    assert lines[0] == "**Your usage** (days in UTC)"
    today = "2 turns, 4,704 tokens (4,000 in, 704 out), cost 0.0136; 1 model call unreported"
    assert lines[1] == f"Today: {today} (not counted)"
    assert lines[2].startswith("This month: 2 turns, 4,704 tokens")
    assert lines[3] == "**Limits**"
    assert lines[4].startswith("- yours per day: 4,704 of 200,000 tokens; resets at 00:00 UTC (in ")
    assert lines[5].startswith("- the bot's per month: 0.2736 of 100.00 in model costs; resets ")
    assert len(lines) == 6  # the Slack budget does not hold on this channel
    assert "**Limits**\n- the bot's per month" in roots.text  # only the global one holds root


async def test_admin_usage_lists_the_months_top_users_and_chats(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, usage=USAGE)
    channel = FakeChannel()
    async with running(settings, [channel], FakeAgent()) as daemon:
        store = daemon.kernel.store
        await spend(store, "alice", "g1", 1000, 0)
        await spend(store, "bob", "g1", 5000, 0)
        await spend(store, "bob", "dm-bob", 2000, 0)
        await channel.inject(dm("/admin usage", message_id="1", user="root"))
        month = await channel.wait_text("Usage this month")
        await channel.inject(dm("/admin usage user bob", message_id="2", user="root"))
        bob = await channel.wait_text("User `fake:bob`")
        await channel.inject(dm("/admin usage chat fake:g1", message_id="3", user="root"))
        chat = await channel.wait_text("Chat `fake:g1`")
        await channel.inject(dm("/admin usage everyone", message_id="4", user="root"))
        await channel.wait_text("Usage: `/admin usage`, `/admin usage user <id>`")
        await channel.inject(dm("/admin usage", message_id="5"))
        await channel.wait_text("`/admin` is for admins only.")
        audit = [(e.actor, e.action, e.detail) for e in await store.audit.recent()]
    assert "Total: 3 turns, 8,000 tokens (8,000 in, 0 out), cost 0.0160" in month.text
    users = month.text.split("**Top users**\n")[1].split("\n**Top chats**\n")
    assert users[0].splitlines() == [
        "1. `fake:bob` — 2 turns, 7,000 tokens (7,000 in, 0 out), cost 0.0140",
        "2. `fake:alice` — 1 turn, 1,000 tokens (1,000 in, 0 out), cost 0.0020",
    ]
    assert users[1].splitlines()[0].startswith("1. `fake:g1` — 2 turns, 6,000 tokens")
    assert "Today: 2 turns, 7,000 tokens" in bob.text
    assert "This month: 2 turns, 6,000 tokens" in chat.text
    assert ("fake:root", "/admin", "usage user bob") in audit


async def test_help_lists_usage_for_everyone_and_admin_usage_for_admins(tmp_path: Path) -> None:
    channel = FakeChannel()
    async with running(make_settings(tmp_path), [channel], FakeAgent()):
        await channel.inject(dm("/help", message_id="1"))
        users = await channel.wait_text("**Commands**")
        await channel.inject(dm("/help", message_id="2", user="root"))
        admins = await channel.wait_for(lambda s: "/admin usage" in s.text)
    assert "`/usage` — your model usage today and this month" in users.text
    assert "/admin" not in users.text
    lines = admins.text.splitlines()
    status = lines.index("`/admin status` — channels, queues, runs and outbox")
    assert lines[status + 1].startswith("`/admin usage [user <id> | chat <id>]` — this month's")
