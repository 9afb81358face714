"""Edits (``message_changed``) and deletions (``message_deleted``) on Slack change the work
they started (design §21). One daemon in Socket Mode serves every case, in order."""

from __future__ import annotations

from pathlib import Path

from bot.config.revisions import EditAfterAnswer
from tests.bot.harness import inbound_outcomes
from tests.channels.revision_support import outcome, set_conversations
from tests.channels.slack_support import BOT, slack_daemon, slack_settings, texts, wait_text
from tests.fakes.agent import FakeAgent
from tests.fakes.slack_api import FakeSlack

DM = "D0001"
CHANNEL = "C0001"


async def test_edits_and_deletions(tmp_path: Path) -> None:  # noqa: PLR0915 - one daemon, all cases
    agent = FakeAgent()
    with FakeSlack() as fake:
        async with slack_daemon(slack_settings(tmp_path, fake), fake, agent) as run:
            # An edit while running restarts the turn in its placeholder: one answer.
            held = agent.hold("slow")
            first = fake.push_message("slow typo")
            await wait_text(fake, DM, "working")
            fake.push_edit(DM, first, "fixed question")
            await wait_text(fake, DM, "echo: fixed question")
            await run.settle()
            assert texts(fake, DM) == ["echo: fixed question"]
            assert len(fake.calls("chat.postMessage")) == 1

            # A deletion while running cancels it and deletes its placeholder.
            doomed = fake.push_message("slow and doomed")
            await wait_text(fake, DM, "working")
            fake.push_delete(DM, doomed)
            await fake.await_call("chat.delete")
            await run.settle()
            assert texts(fake, DM) == ["echo: fixed question"]

            # An edit, then a deletion before the restart is over: its placeholder goes too.
            flip = fake.push_message("slow flip")
            await wait_text(fake, DM, "working")
            fake.push_edit(DM, flip, "slow flop")
            fake.push_delete(DM, flip)
            await outcome(run.kernel, "withdrawn", 2)
            await run.settle()
            assert texts(fake, DM) == ["echo: fixed question"]

            # Queued: an edit replaces the text, a deletion drops the message.
            blocker = agent.hold("block")
            fake.push_message("block the lane")
            await wait_text(fake, DM, "working")
            edited = fake.push_message("queued typo")
            dropped = fake.push_message("queued and dropped")
            await outcome(run.kernel, "accepted", 6)
            fake.push_edit(DM, edited, "queued fixed")
            fake.push_delete(DM, dropped)
            await outcome(run.kernel, "edit_applied")
            await outcome(run.kernel, "withdrawn", 3)
            blocker.set()
            await wait_text(fake, DM, "echo: queued fixed")
            await run.settle()
            said = [r.turn.text for r in agent.runs]
            assert not any("typo" in t or "dropped" in t for t in said[2:])

            # Two queued messages merged into one turn; one deleted: the other runs again alone.
            gate = agent.hold("gate")
            fake.push_message("gate")
            await wait_text(fake, DM, "working")
            merged = fake.push_message("slow one")
            fake.push_message("second")
            await outcome(run.kernel, "accepted", 9)
            gate.set()
            await wait_text(fake, DM, "echo: gate")
            await fake.await_until(lambda: any("working" in t for t in texts(fake, DM)))
            fake.push_delete(DM, merged)
            await wait_text(fake, DM, "echo: second")
            await run.settle()
            assert texts(fake, DM)[-2:] == ["echo: gate", "echo: second"]
            assert agent.runs[-1].turn.text == "second"

            # An unfurl (the text as it was) and, by default, an edit after the answer: nothing.
            fake.push_edit(DM, edited, "queued fixed")
            fake.push_edit(DM, edited, "queued fixed again")
            await outcome(run.kernel, "edit_ignored", 1)
            await run.settle()
            assert inbound_outcomes(run.kernel)["edit_ignored"] == 1  # the unfurl never came in

            # An edit of a message the bot never took (unaddressed in a channel): nothing.
            unaddressed = fake.push_message("no mention", channel=CHANNEL, channel_type="channel")
            fake.push_edit(CHANNEL, unaddressed, f"<@{BOT}> now with one")
            await outcome(run.kernel, "edit_ignored", 2)
            assert texts(fake, CHANNEL) == []
            assert not any("again" in text for text in texts(fake, DM))

            # ``answer``: the edited text is answered again, in a labelled reply.
            set_conversations(run.daemon, on_edit_after_answer=EditAfterAnswer.ANSWER)
            fake.push_edit(DM, edited, "queued fixed once more")
            await wait_text(fake, DM, "echo: queued fixed once more")
            await run.settle()
            assert any("Answer to the edited message" in text for text in texts(fake, DM))

            # Deleted after its answer: the answer stays, unless the setting says otherwise.
            kept = len(texts(fake, DM))
            fake.push_delete(DM, first)
            await outcome(run.kernel, "withdrawal_ignored")
            assert len(texts(fake, DM)) == kept
            set_conversations(run.daemon, delete_answers_of_recalled=True)
            gone = fake.push_message("answer me then forget it")
            await wait_text(fake, DM, "echo: answer me then forget it")
            await run.settle()
            fake.push_delete(DM, gone)
            await fake.await_until(lambda: len(texts(fake, DM)) == kept)
            await run.settle()
        held.set()
    assert not any("forget" in text for text in texts(fake, DM))
