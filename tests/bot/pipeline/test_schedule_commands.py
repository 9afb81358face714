"""/schedules and /unschedule: a chat sees and cancels its own schedules, an admin every
chat's (design §19 "Schedules")."""

from __future__ import annotations

from pathlib import Path

from bot.messages import ChatType
from bot.ports.schedules import ScheduleAction, ScheduleTarget
from bot.schedules.book import ScheduleBook
from tests.bot.harness import make_settings, running
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import FakeChannel, dm


def _target(chat_id: str) -> ScheduleTarget:
    return ScheduleTarget(channel="fake", account_id="", chat_id=chat_id, chat_type=ChatType.DM)


async def test_a_chat_lists_and_cancels_its_own_schedules_and_an_admin_any(
    tmp_path: Path,
) -> None:
    settings = make_settings(tmp_path)
    channel = FakeChannel()
    async with running(settings, [channel], FakeAgent()) as run:
        book = ScheduleBook(lambda: settings, run.kernel.store)
        for chat, text in (("dm-alice", "water the plants"), ("dm-bob", "call mum")):
            await book.create(
                _target(chat), at=None, cron="0 9 * * 1", timezone="Europe/Berlin",
                action=ScheduleAction.MESSAGE, text=text, actor="cli:test",
            )  # fmt: skip
        await channel.inject(dm("/schedules", message_id="1"))
        mine = await channel.wait_text("**Schedules**")
        await channel.inject(dm("/unschedule 2", message_id="2"))
        refused = await channel.wait_text("Not cancelled")
        await channel.inject(dm("/schedules all", message_id="3"))
        await channel.wait_text("for admins only")
        await channel.inject(dm("/schedules all", message_id="4", user="root"))
        everything = await channel.wait_text("in fake dm-bob")
        await channel.inject(dm("/unschedule 2", message_id="5", user="root"))
        await channel.wait_text("Cancelled schedule #2.")
        await channel.inject(dm("/unschedule 1", message_id="6"))
        await channel.wait_text("Cancelled schedule #1.")
        audit = [entry.action for entry in await run.kernel.store.audit.recent()]
    assert "water the plants" in mine.text
    assert "call mum" not in mine.text
    assert "no schedule 2 in this chat" in refused.text
    assert "water the plants" in everything.text
    assert audit.count("schedule cancel") == 2
