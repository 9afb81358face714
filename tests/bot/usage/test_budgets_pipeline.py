"""Budgets in the running daemon (design §25): a spent budget's message is answered with the
limit and its reset, finished as ``over_budget``, and never reaches the agent or the model;
others, and admins, are answered as before."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.embedded import EmbeddedBackend
from bot.messages import OutboundText, utc_now
from bot.ports import Store
from bot.ports.usage import UsageRecord, usage_of
from tests.bot.harness import inbound_outcomes, make_settings, routed, running
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import FakeChannel, dm, group
from tests.fakes.openai_server import FakeOpenAIServer, Reply

DAILY = {"scope": "user", "per": "day", "tokens": 1000}


def noon_zone() -> str:
    """A zone where it is now past noon and before one, so the day a test records its usage
    in does not end while the test runs, whenever it runs."""
    offset = 12 - utc_now().hour
    return "UTC" if offset == 0 else f"Etc/GMT{-offset:+d}"


async def spend(store: Store, user: str, tokens: int, *, chat: str | None = None) -> None:
    """Record a turn of ``user``'s on the fake channel, as the meter does when a turn ends."""
    usage = usage_of(store)
    assert usage is not None
    at = utc_now()
    await usage.record(
        [
            UsageRecord(
                at=at,
                channel="fake",
                account_id="",
                chat_id=chat or f"dm-{user}",
                user_id=user,
                thread_id="t-earlier",
                model="fake-model",
                correlation_id=f"earlier-{user}-{at.timestamp()}",
                calls=1,
                unreported_calls=0,
                input_tokens=tokens,
                output_tokens=0,
                cached_tokens=0,
                cost=0.0,
            )
        ]
    )


async def outcome(store: Store, message_id: str) -> tuple[str, str]:
    (entry,) = await store.inbound.find("fake", message_id)
    return str(entry.status), entry.reason or ""


async def test_a_spent_daily_budget_is_refused_with_its_reset_and_no_turn(tmp_path: Path) -> None:
    zone = noon_zone()
    settings = make_settings(tmp_path, usage={"timezone": zone, "budgets": [DAILY]})
    channel, agent = FakeChannel(), FakeAgent()
    async with running(settings, [channel], agent) as daemon:
        store = daemon.kernel.store
        await spend(store, "alice", 1000)
        await spend(store, "root", 5000)
        await channel.inject(dm("summarise the report", message_id="1"))
        refused = await channel.wait_text("⛔ You have used 1,000 of your 1,000 tokens for today.")
        await channel.inject(dm("hi", message_id="2", user="bob"))
        await channel.wait_text("echo: hi")
        await channel.inject(dm("admins go on", message_id="3", user="root"))
        await channel.wait_text("echo: admins go on")
        await routed(daemon.kernel, 3)
        statuses = [await outcome(store, m) for m in ("1", "2", "3")]
        outcomes = inbound_outcomes(daemon.kernel)
    assert [run.turn.text for run in agent.runs] == ["hi", "admins go on"]
    assert isinstance(refused.delivery, OutboundText)
    assert refused.delivery.reply_to == "1"
    assert refused.delivery.destination.chat_id == "dm-alice"
    assert " It resets at 00:00 " in refused.text
    assert refused.text.endswith(" To raise it, ask an admin of this bot.")
    assert statuses[0] == ("handled", "over_budget")
    assert outcomes["over_budget"] == 1
    assert outcomes["accepted"] == 2


async def test_a_chat_budget_holds_everyone_in_the_chat_but_not_its_chatter(
    tmp_path: Path,
) -> None:
    """Only a message that would start a turn is held: unaddressed chatter goes its way."""
    budget = {"scope": "chat", "per": "day", "tokens": 500}
    settings = make_settings(tmp_path, usage={"timezone": noon_zone(), "budgets": [budget]})
    channel, agent = FakeChannel(), FakeAgent()
    async with running(settings, [channel], agent) as daemon:
        await spend(daemon.kernel.store, "alice", 500, chat="g1")
        await channel.inject(group("just chatting", message_id="1", user="bob"))
        await channel.inject(group("@fakebot help", message_id="2", user="bob", mentions_bot=True))
        await channel.wait_text("⛔ This chat has used 500 of its 500 tokens for today.")
        await channel.inject(group("@fakebot hi", message_id="3", chat_id="g2", mentions_bot=True))
        await channel.wait_text("echo: @fakebot hi")
        await routed(daemon.kernel, 3)
        statuses = [await outcome(daemon.kernel.store, m) for m in ("1", "2")]
    assert statuses == [("dropped", "not_addressed"), ("handled", "over_budget")]
    assert [run.turn.text for run in agent.runs] == ["@fakebot hi"]


@pytest.fixture
def model() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


async def test_a_refused_message_makes_no_model_call(
    tmp_path: Path, model: FakeOpenAIServer
) -> None:
    settings = make_settings(
        tmp_path,
        agent={"model": {"base_url": model.base_url, "api_key": "sk-test", "name": "fake-model"}},
        usage={"timezone": noon_zone(), "budgets": [DAILY]},
    )
    model.script(Reply(text="Hello Bob."))
    channel = FakeChannel()
    async with running(settings, [channel], EmbeddedBackend(settings, max_retries=0)) as daemon:
        await spend(daemon.kernel.store, "alice", 1200)
        await channel.inject(dm("are you there?", message_id="1"))
        await channel.wait_text("⛔ You have used 1,200 of your 1,000 tokens for today.")
        await channel.inject(dm("I am Bob", message_id="2", user="bob"))
        await channel.wait_text("Hello Bob.")
    (request,) = model.requests
    assert [m["content"] for m in request.messages if m["role"] == "user"] == ["I am Bob"]
