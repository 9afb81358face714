"""The per-user message rate in the running daemon (design §25): a user's flood is refused
before the lane while another user in the same chat is answered; admins are exempt."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from bot.messages import utc_now
from bot.ports import Store
from bot.ports.usage import usage_of
from tests.bot.harness import inbound_outcomes, make_settings, routed, running
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import FakeChannel, group

LIMIT = 2


async def flooded(store: Store, user: str) -> None:
    """``user`` has sent ``LIMIT`` messages this minute and the next: whatever minute the
    test's messages land in (it runs for less than one), the next one from them is too many.
    The next minute first: a count drops its user's earlier minutes."""
    usage = usage_of(store)
    assert usage is not None
    minute = utc_now().replace(second=0, microsecond=0)
    for start in (minute + timedelta(minutes=1), minute):
        for _ in range(LIMIT):
            await usage.hit("fake", user, start)


async def outcome(store: Store, message_id: str) -> tuple[str, str]:
    (entry,) = await store.inbound.find("fake", message_id)
    return str(entry.status), entry.reason or ""


async def test_a_flood_from_one_user_does_not_hold_another_in_the_same_chat(
    tmp_path: Path,
) -> None:
    settings = make_settings(tmp_path, usage={"messages_per_minute": LIMIT})
    channel, agent = FakeChannel(), FakeAgent()
    async with running(settings, [channel], agent) as daemon:
        store = daemon.kernel.store
        await flooded(store, "alice")
        await flooded(store, "root")
        for number in ("1", "2", "3"):
            await channel.inject(group(f"@fakebot {number}", message_id=number, mentions_bot=True))
        told = await channel.wait_text("⏳ You can send 2 messages a minute to this bot")
        await channel.inject(
            group("@fakebot bob here", message_id="4", user="bob", mentions_bot=True)
        )
        await channel.inject(
            group("@fakebot root here", message_id="5", user="root", mentions_bot=True)
        )
        await routed(daemon.kernel, 5)
        await daemon.kernel.conversations.lanes.wait_idle()
        statuses = [await outcome(store, m) for m in ("1", "2", "3")]
        outcomes = inbound_outcomes(daemon.kernel)
    assert sorted(run.turn.text for run in agent.runs) == [
        "@fakebot bob here",
        "@fakebot root here",
    ]
    assert statuses == [("handled", "rate_limited")] * 3
    assert outcomes["rate_limited"] == 3
    replies = [text for text in channel.texts() if text.startswith("⏳ You can send")]
    assert 1 <= len(replies) <= 2  # once a minute: two only if the minute turned mid-flood
    assert "Write again at " in told.text
