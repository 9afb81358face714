"""A daily budget in the running daemon against the fake model (design §25): a user at their
budget gets the budget reply and the model is not called, while another user in the same chat
is answered; once the day has turned in ``usage.timezone``, the user is answered again.

The daemon's usage clock is the test's (``Overrides.usage_clock``): the day turns when the
test says so, whatever the time the test runs at, and the usage rows carry that clock's time.

(A flood from one user refused while another in the same chat is answered is pinned in
``test_rate_pipeline.py``.)
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.ports.usage import UsageFilter, usage_of
from tests.bot.harness import make_settings
from tests.bot.usage.e2e_support import (
    MovableClock,
    Planned,
    TurnModel,
    checked_calls,
    model_section,
    reply_to,
    usage_daemon,
)
from tests.fakes.channel import PLAIN_CAPS, FakeChannel, group

BERLIN = "Europe/Berlin"
EVENING = datetime(2026, 3, 10, 20, 0, tzinfo=UTC)
"""21:00 on 10 March in Berlin (CET)."""
AFTER_MIDNIGHT = datetime(2026, 3, 10, 23, 30, tzinfo=UTC)
"""00:30 on 11 March in Berlin: the same UTC day, the next budget day."""
MARCH_10 = datetime(2026, 3, 9, 23, 0, tzinfo=UTC)
"""When 10 March begins in Berlin."""
MARCH_11 = datetime(2026, 3, 10, 23, 0, tzinfo=UTC)
DAILY = {"scope": "user", "per": "day", "tokens": 100}


@pytest.fixture
def model() -> Iterator[TurnModel]:
    with TurnModel() as fake:
        yield fake


def turn(number: int, user: str, tags: str = "") -> Planned:
    return Planned(number=number, channel="fake", chat_id="g1", user_id=user, tags=tags)


async def say(channel: FakeChannel, said: Planned) -> str:
    """Send the turn's message in its group; what answered (or refused) it."""
    message_id = f"m{said.number}"
    await channel.inject(
        group(said.text, message_id=message_id, user=said.user_id, mentions_bot=True)
    )
    return await reply_to([channel], message_id)


async def test_a_user_at_the_daily_budget_is_refused_without_a_model_call_until_the_day_turns(
    tmp_path: Path, model: TurnModel
) -> None:
    clock = MovableClock(EVENING)
    settings = make_settings(
        tmp_path,
        agent={"model": model_section(model)},
        usage={"timezone": BERLIN, "budgets": [DAILY]},
    )
    channel = FakeChannel(caps=PLAIN_CAPS)
    async with usage_daemon(settings, [channel], clock=clock) as run:
        answers = [
            await say(channel, turn(0, "alice", "[uses=60+20]")),
            await say(channel, turn(1, "alice", "[uses=15+5]")),
        ]
        refused = await say(channel, turn(2, "alice", "[uses=1+1]"))
        answers.append(await say(channel, turn(3, "bob", "[uses=1+1]")))
        clock.now = AFTER_MIDNIGHT
        answers.append(await say(channel, turn(4, "alice", "[uses=60+20]")))
        store = run.kernel.store
        (entry,) = await store.inbound.find("fake", "m2")
        usage = usage_of(store)
        assert usage is not None
        days = [
            (await usage.totals(UsageFilter(since=since, until=until, user_id="alice")))[0]
            for since, until in ((MARCH_10, MARCH_11), (MARCH_11, None))
        ]
    assert answers == [f"answer turn-{n}." for n in (0, 1, 3, 4)]
    assert refused == (
        "⛔ You have used 100 of your 100 tokens for today. It resets at 00:00 CET"
        " (in 3 h). To raise it, ask an admin of this bot."
    )
    assert (entry.status, entry.reason) == ("handled", "over_budget")
    assert [call.turn for call in checked_calls(model)] == [0, 1, 3, 4]  # none for the refused
    assert [(day.turns, day.tokens) for day in days] == [(2, 100), (1, 80)]
