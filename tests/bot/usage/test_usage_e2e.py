"""Usage acceptance against the fake model (design §25): a hundred turns of five users in three
chats on two channels, run by the daemon with the embedded agent, sum in the store to exactly
what the provider reported, per user, chat, channel and model, on SQLite and on PostgreSQL.

Some turns make a tool call (two model calls, summed into the turn), some name a second
model (a turn counts under its first model; its tokens under each), and some get replies
without usage: counted as unreported calls, never as zero tokens."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from bot.config.settings import Settings
from bot.ports import Store
from bot.ports.usage import UsageDimension, UsageFilter, UsageTotal, usage_of
from store.postgres import PostgresStore
from tests.bot.cli.cli_support import run_cli
from tests.bot.harness import Running, make_settings
from tests.bot.usage.e2e_support import (
    MINI_TAG,
    PRICES,
    QUIET,
    TOOL,
    ModelCall,
    Planned,
    TurnModel,
    by_group,
    checked_calls,
    expected_totals,
    model_section,
    usage_daemon,
)
from tests.fakes.channel import PLAIN_CAPS, FakeChannel, group

USERS = ("ada", "bob", "cy", "dee", "eve")
CHATS = (("fake", "g1"), ("fake", "g2"), ("side", "g3"))
TURNS = 100
CACHED = "[uses=90+15/40]"
DIMENSIONS: tuple[UsageDimension | None, ...] = (None, "user", "chat", "channel", "model")


def tags(number: int) -> str:
    """Every tenth turn calls a tool, every seventeenth gets no usage reported, every fourth
    names the second model (for its first call: a tool turn's second call is the main one),
    every ninth reads cached input."""
    chosen = (
        (TOOL, number % 10 == 3),
        (QUIET, number % 17 == 5),
        (MINI_TAG, number % 4 == 1),
        (CACHED, number % 9 == 7),
    )
    return " ".join(tag for tag, hit in chosen if hit)


def the_plan() -> dict[int, Planned]:
    """Turn ``n`` is user ``n % 5``'s in chat ``n % 3``: every user writes in every chat."""
    return {
        n: Planned(
            number=n,
            channel=CHATS[n % len(CHATS)][0],
            chat_id=CHATS[n % len(CHATS)][1],
            user_id=USERS[n % len(USERS)],
            tags=tags(n),
        )
        for n in range(TURNS)
    }


@pytest.fixture(scope="module")
def model() -> Iterator[TurnModel]:
    with TurnModel() as fake:
        yield fake


def settings_for(tmp_path: Path, model: TurnModel, **sections: Any) -> Settings:
    return make_settings(
        tmp_path,
        agent={"model": model_section(model)},
        conversations={"group_scope": "user"},
        usage={"prices": PRICES},
        **sections,
    )


@asynccontextmanager
async def daemon(
    settings: Settings, store: Store | None = None
) -> AsyncIterator[tuple[Running, dict[str, FakeChannel]]]:
    """The daemon with two channels, ``fake`` and ``side``."""
    channels = {name: FakeChannel(fake_name=name, caps=PLAIN_CAPS) for name in ("fake", "side")}
    async with usage_daemon(settings, list(channels.values()), store=store) as run:
        yield run, channels


async def converse(channel: FakeChannel, turns: list[Planned]) -> None:
    """One conversation: each message once the previous one is answered (none merged)."""
    for turn in turns:
        message = group(
            turn.text,
            message_id=f"m{turn.number}",
            user=turn.user_id,
            chat_id=turn.chat_id,
            channel=turn.channel,
            mentions_bot=True,
        )
        await channel.inject(message)
        await channel.wait_text(turn.answer, within=20)


async def run_plan(
    run: Running, channels: dict[str, FakeChannel], plan: dict[int, Planned]
) -> None:
    """Every conversation at once (each user's in each chat: ``group_scope: user``); back
    when every turn has ended (its usage recorded)."""
    conversations: dict[tuple[str, str, str], list[Planned]] = {}
    for turn in plan.values():
        conversations.setdefault((turn.channel, turn.chat_id, turn.user_id), []).append(turn)
    async with asyncio.TaskGroup() as talks:
        for (channel, chat_id, user), turns in conversations.items():
            talks.create_task(converse(channels[channel], turns), name=f"talk:{chat_id}:{user}")
    await asyncio.wait_for(run.kernel.conversations.lanes.wait_idle(), 10)


Totals = dict[UsageDimension | None, dict[str, UsageTotal]]


async def stored_totals(store: Store) -> Totals:
    usage = usage_of(store)
    assert usage is not None
    return {by: by_group(await usage.totals(UsageFilter(), by=by)) for by in DIMENSIONS}


def expected(calls: list[ModelCall], plan: dict[int, Planned]) -> Totals:
    return {by: expected_totals(calls, plan, by) for by in DIMENSIONS}


def assert_the_plan_was_followed(calls: list[ModelCall], plan: dict[int, Planned]) -> None:
    """Each turn called the model once, twice with a tool; the quiet ones reported nothing."""
    per_turn = {n: [c for c in calls if c.turn == n] for n in plan}
    assert {n: len(c) for n, c in per_turn.items()} == {
        n: 2 if TOOL in t.tags else 1 for n, t in plan.items()
    }
    unreported = {n for n, c in per_turn.items() if any(call.usage is None for call in c)}
    assert unreported == {n for n, t in plan.items() if QUIET in t.tags}


async def test_a_hundred_turns_sum_to_what_the_model_reported_on_sqlite(
    tmp_path: Path, model: TurnModel
) -> None:
    plan, mark = the_plan(), len(model.calls())
    settings = settings_for(tmp_path, model)
    async with daemon(settings) as (run, channels):
        await run_plan(run, channels, plan)
        stored = await stored_totals(run.kernel.store)
    calls = checked_calls(model)[mark:]
    assert_the_plan_was_followed(calls, plan)
    want = expected(calls, plan)
    assert stored == want
    (everything,) = want[None].values()
    assert everything.turns == TURNS
    assert everything.unreported_calls == 7  # six quiet turns, one with a tool
    assert len(want["model"]) == 2
    assert everything.cost > 0
    assert everything.cached_tokens > 0

    config = tmp_path / "switchboard.json"
    config.write_text(json.dumps({"config_version": 1, "state_dir": str(tmp_path)}))
    arguments = ("usage", "-c", config, "--by", "chat", "--since", "1d", "--json")
    shown = await asyncio.to_thread(run_cli, *arguments)
    assert shown.status == 0, shown.err
    assert {row["group"]: row for row in json.loads(shown.out)} == {
        group: {
            "group": group, "turns": t.turns, "calls": t.calls,
            "unreported_calls": t.unreported_calls, "input_tokens": t.input_tokens,
            "output_tokens": t.output_tokens, "cached_tokens": t.cached_tokens,
            "tokens": t.tokens, "cost": t.cost,
        }
        for group, t in want["chat"].items()
    }  # fmt: skip


async def test_a_hundred_turns_sum_to_what_the_model_reported_on_postgresql(
    tmp_path: Path, model: TurnModel, schema: tuple[str, str]
) -> None:
    url, name = schema
    plan, mark = the_plan(), len(model.calls())
    settings = settings_for(tmp_path, model, store={"url": url, "schema": name})
    async with daemon(settings, PostgresStore.from_url(url, schema=name)) as (run, channels):
        await run_plan(run, channels, plan)
        stored = await stored_totals(run.kernel.store)
    calls = checked_calls(model)[mark:]
    assert_the_plan_was_followed(calls, plan)
    assert stored == expected(calls, plan)
