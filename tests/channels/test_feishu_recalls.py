"""Recalls on Feishu (``im.message.recalled_v1``) change the work they started (design §21).

Feishu sends bots no event for an edited message, so there are no edit cases here. One daemon
over the real long connection serves every case, in order.
"""

from __future__ import annotations

from pathlib import Path

from bot.messages import Revision, RevisionKind
from bot.ports import FinalAnswer
from channels.feishu.inbound import BotSelf, Translator
from tests.channels.feishu_support import DM, feishu_daemon, feishu_settings, wait_text
from tests.channels.revision_support import outcome, set_conversations
from tests.fakes.agent import FakeAgent
from tests.fakes.feishu_api import FakeFeishu
from tests.fakes.scripted_agent import ScriptedAgent

RECALLED = {
    "schema": "2.0",
    "header": {"event_id": "e1", "event_type": "im.message.recalled_v1", "tenant_key": "tenant_1"},
    "event": {
        "message_id": "om_1", "chat_id": "oc_1", "recall_time": "1700000000000",
        "recall_type": "message_owner",
    },
}  # fmt: skip
"""As ``FakeFeishu.push_recall`` sends it; lark-oapi 1.7.5 ``P2ImMessageRecalledV1Data``
has exactly these four fields."""


def shown(fake: FakeFeishu) -> list[str]:
    """The ids of the bot's messages in the DM that were not recalled."""
    return [m.message_id for m in fake.sent_messages(DM) if not m.deleted]


async def test_recalls_while_queued_running_and_answered(tmp_path: Path) -> None:
    agent = FakeAgent()
    with FakeFeishu() as fake:
        async with feishu_daemon(feishu_settings(tmp_path, fake), fake, agent) as run:
            # Running: the turn is cancelled and its placeholder recalled; nothing is said.
            held = agent.hold("slow")
            doomed = await run.send("slow and doomed", chat_id=DM)
            await wait_text(fake, DM, "working")
            fake.push_recall(doomed)
            await fake.await_call("im.message.delete")
            await run.settle()
            assert shown(fake) == []

            # Queued: the recalled message is dropped before it runs.
            blocker = agent.hold("block")
            await run.send("block the lane", chat_id=DM)
            await wait_text(fake, DM, "working")
            dropped = await run.send("queued and dropped", chat_id=DM)
            await outcome(run.kernel, "accepted", 3)
            fake.push_recall(dropped)
            await outcome(run.kernel, "withdrawn", 2)
            blocker.set()
            await wait_text(fake, DM, "echo: block the lane")
            await run.settle()
            assert "queued and dropped" not in [r.turn.text for r in agent.runs]

            # Answered: the answer stays, unless ``delete_answers_of_recalled``.
            answered = await run.send("answer me", chat_id=DM)
            await wait_text(fake, DM, "echo: answer me")
            await run.settle()
            kept = shown(fake)
            fake.push_recall(answered)
            await outcome(run.kernel, "withdrawal_ignored")
            assert shown(fake) == kept
            set_conversations(run.daemon, delete_answers_of_recalled=True)
            forgotten = await run.send("answer me then forget it", chat_id=DM)
            await wait_text(fake, DM, "echo: answer me then forget it")
            await run.settle()
            fake.push_recall(forgotten)
            await fake.await_until(lambda: shown(fake) == kept)
            await run.settle()
        held.set()


async def test_a_reply_to_a_recalled_message_goes_to_the_chat(tmp_path: Path) -> None:
    """The recall reached the fake before its event reached the bot: the reply is refused
    ("The message was withdrawn.", 230011) and the answer is posted in the chat instead."""
    agent = ScriptedAgent()
    with FakeFeishu() as fake:
        async with feishu_daemon(feishu_settings(tmp_path, fake), fake, agent) as run:
            asked = await run.send("quick question", chat_id=DM)
            await fake.await_until(lambda: bool(agent.turns))
            fake.push_recall(asked, deliver=False)
            agent.feed(FinalAnswer(text="the answer"))
            await wait_text(fake, DM, "the answer")
            await run.settle()
    replies = fake.calls("im.message.reply")
    assert [c.path for c in replies] == [f"/open-apis/im/v1/messages/{asked}/reply"]
    assert fake.calls("im.message.create")
    [answer] = fake.sent_messages(DM)
    assert answer.parent_id == ""


def test_feishu_recalled_event_is_a_withdrawal() -> None:
    decoded = Translator(BotSelf(open_id="ou_bot", app_id="cli_app")).decode(RECALLED)
    assert decoded is not None
    message = decoded.message
    assert (message.message_id, message.account_id, message.chat_id) == (
        "om_1/recalled", "tenant_1", "oc_1",
    )  # fmt: skip
    assert message.revision == Revision(kind=RevisionKind.RECALLED, message_id="om_1")
