"""Edits on Telegram (``edited_message``) change the work they started (design §21).

Telegram tells bots nothing about deleted messages, so there are no recall cases here. One
daemon serves every case, in order.
"""

from __future__ import annotations

from pathlib import Path

from bot.config.revisions import EditAfterAnswer
from tests.channels.revision_support import outcome, set_conversations
from tests.channels.telegram_support import telegram_daemon, telegram_settings, texts, wait_text
from tests.fakes.agent import FakeAgent
from tests.fakes.telegram_api import FakeTelegram

DM = 42


def _id(update: dict[str, object]) -> int:
    message = update["message"]
    assert isinstance(message, dict)
    return int(message["message_id"])


async def test_edits_while_running_queued_and_after_the_answer(tmp_path: Path) -> None:
    agent = FakeAgent()
    with FakeTelegram() as fake:
        async with telegram_daemon(telegram_settings(tmp_path, fake), agent) as run:
            # Running: the turn restarts with the new text, in the same placeholder.
            held = agent.hold("slow")
            first = _id(fake.push_message("slow typo"))
            await wait_text(fake, DM, "working")
            fake.push_edit(first, "fixed question")
            await wait_text(fake, DM, "echo: fixed question")
            await run.settle()
            assert texts(fake, DM) == ["echo: fixed question"]
            assert len(fake.calls("sendMessage")) == 1
            assert [r.turn.text for r in agent.runs] == ["slow typo", "fixed question"]

            # Queued: the queue holds the edited text; the old one never runs.
            blocker = agent.hold("block")
            fake.push_message("block the lane")
            await agent.wait_runs(3)
            queued = _id(fake.push_message("queued typo"))
            await fake.await_call(
                "setMessageReaction", lambda c: c.params["message_id"] == str(queued)
            )
            fake.push_edit(queued, "queued fixed")
            await outcome(run.kernel, "edit_applied")
            blocker.set()
            await wait_text(fake, DM, "echo: queued fixed")
            await run.settle()
            assert "queued typo" not in [r.turn.text for r in agent.runs]

            # Answered, ``ignore`` (the default): nothing happens; nor for an unchanged text.
            fake.push_edit(queued, "queued fixed again")
            fake.push_edit(queued, "queued fixed again")
            await outcome(run.kernel, "edit_ignored", 2)
            await run.settle()
            assert not any("again" in text for text in texts(fake, DM))

            # Answered, ``answer``: a labelled reply to the edited message.
            set_conversations(run.daemon, on_edit_after_answer=EditAfterAnswer.ANSWER)
            fake.push_edit(queued, "queued fixed once more")
            await wait_text(fake, DM, "echo: queued fixed once more")
            await run.settle()
        held.set()
    answer = next(m for m in fake.chat_messages(DM) if "once more" in str(m.get("text")))
    assert "Answer to the edited message" in answer["text"]
    assert answer["reply_to_message"]["message_id"] == queued


async def test_an_edit_applied_to_a_queued_message_survives_a_restart(tmp_path: Path) -> None:
    """The queue lives in memory; the edit's journal entry is what the next start resumes."""
    with FakeTelegram() as fake:
        settings = telegram_settings(tmp_path, fake, daemon={"shutdown_grace_s": 0})
        agent = FakeAgent()
        async with telegram_daemon(settings, agent) as run:
            agent.hold("block")
            fake.push_message("block the lane")
            await wait_text(fake, DM, "working")
            queued = _id(fake.push_message("queued typo"))
            await outcome(run.kernel, "accepted", 2)
            fake.push_edit(queued, "queued fixed")
            await outcome(run.kernel, "edit_applied")
        restarted = FakeAgent()
        async with telegram_daemon(settings, restarted) as run:
            await wait_text(fake, DM, "echo: queued fixed")
            await run.settle()
    said = [r.turn.text for r in restarted.runs]
    assert "queued fixed" in said
    assert "queued typo" not in said
