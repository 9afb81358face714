"""Human takeover and group context on Feishu: the real adapter and lark-oapi's real long
connection against the strict FakeFeishu (design "Human takeover", "Group context").

- ``/mute`` at a group's top level mutes the whole chat: an @-mention gets no answer and no
  reaction stage (nothing says an answer is coming); ``/unmute`` and it is answered again.
- In a Feishu thread (``root_id`` / ``thread_id``), a reply by one of ``access.humans`` while
  the bot's turn runs makes the bot yield: nothing is posted, the placeholder card is recalled,
  the asker's message keeps no "typing" reaction, and the thread is muted.
- The embedded agent's ``handoff`` tool, through the fake model, posts the note in the reply
  chain, mutes it and announces the handoff in the on-call chat.
- ``group_policy: listen``: unaddressed group chatter reaches the agent (bounded) with the
  next @-mention, which alone is answered; the start warns about ``im:message.group_msg``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.embedded import EmbeddedBackend
from bot.kernel import Kernel
from bot.messages import Reaction, utc_now
from bot.pipeline.group_context import CONTEXT_HEADER
from bot.ports.mutes import Mute, mutes_of
from channels.feishu.outbound import REACTIONS
from tests.channels.feishu_support import GROUP, at_bot, feishu_daemon, feishu_settings, texts
from tests.channels.feishu_support import wait_text as feishu_wait
from tests.channels.revision_support import outcome
from tests.fakes.agent import FakeAgent
from tests.fakes.feishu.records import Message
from tests.fakes.feishu_api import FakeFeishu
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall

SAM = "ou_sam"
"""A support colleague (``access.humans``)."""
THREAD = "omt_build1"
OPS = "oc_oncall"
TYPING = REACTIONS[Reaction.WORKING]
WARNING = "group_policy listen: "


def live(fake: FakeFeishu, chat_id: str = GROUP) -> list[Message]:
    """The bot's messages in the chat that were not recalled."""
    return [m for m in fake.sent_messages(chat_id) if not m.deleted]


def reacted(fake: FakeFeishu, message_id: str) -> list[str]:
    """Every emoji the bot ever put on ``message_id`` (removed ones too), in order."""
    path = f"/open-apis/im/v1/messages/{message_id}/reactions"
    return [str(c.json["reaction_type"]["emoji_type"]) for c in fake.calls(path)]


async def active_mutes(kernel: Kernel) -> list[Mute]:
    table = mutes_of(kernel.store)
    assert table is not None
    return await table.active(utc_now())


async def test_mute_unmute_and_a_yield_to_a_human_in_a_thread(tmp_path: Path) -> None:
    access = {"dm_policy": "open", "admins": ["feishu:ou_admin"], "humans": [f"feishu:{SAM}"]}
    agent = FakeAgent()
    release = agent.hold("slow")
    with FakeFeishu() as fake:
        settings = feishu_settings(tmp_path, fake, access=access)
        async with feishu_daemon(settings, fake, agent) as run:
            await run.send(**at_bot(fake, "/mute 30m"))
            await feishu_wait(fake, GROUP, "Muted in this chat for 30m")
            muted = await run.send(**at_bot(fake, "anyone?"))
            await outcome(run.kernel, "muted")
            await run.send(**at_bot(fake, "/unmute"))
            await feishu_wait(fake, GROUP, "Unmuted in this chat")
            answered = await run.send(**at_bot(fake, "hello again"))
            await feishu_wait(fake, GROUP, "echo: hello again")
            await run.settle()
            before = [m.message_id for m in live(fake)]

            opening = fake.message_payload(
                "the build is red", chat_id=GROUP, chat_type="group", thread_id=THREAD
            )  # the thread's first message, known to the fake (not delivered: no mention)
            root = str(opening["event"]["message"]["message_id"])
            in_thread = {"root_id": root, "parent_id": root, "thread_id": THREAD}
            asked = await run.send(**at_bot(fake, "slow: why is the build red?"), **in_thread)
            await agent.wait_runs(2)
            await feishu_wait(fake, GROUP, "working")  # the placeholder card shows
            await run.send(
                "I'll take this one", chat_id=GROUP, chat_type="group", sender_open_id=SAM,
                **in_thread,
            )  # fmt: skip
            await outcome(run.kernel, "yielded")
            await fake.await_until(lambda: [m.message_id for m in live(fake)] == before, 5.0)
            release.set()
            await run.send("still there?", chat_id=GROUP, chat_type="group", **in_thread)
            await outcome(run.kernel, "muted", 2)  # the thread stays muted (yield_mute)
            await run.settle()
            mutes = await active_mutes(run.kernel)
            after = [m.message_id for m in live(fake)]
            shown = texts(fake, GROUP)
    assert after == before  # nothing was posted for the yielded turn, nor after it
    assert not any("echo: anyone?" in t or "echo: still there?" in t for t in shown)
    assert [r.turn.text for r in agent.runs] == ["hello again", "slow: why is the build red?"]
    assert reacted(fake, muted) == []  # a muted message shows no stage at all
    assert [r["emoji_type"] for r in fake.reactions(answered)] == [REACTIONS[Reaction.DONE]]
    assert TYPING not in [r["emoji_type"] for r in fake.reactions(asked)]
    ((key, by),) = [(m.key, m.muted_by) for m in mutes]
    assert (key.chat_id, key.topic_id, key.user_id, by) == (GROUP, root, None, f"feishu:{SAM}")


async def test_handoff_tool_mutes_the_reply_chain_notes_and_tells_on_call(
    tmp_path: Path,
) -> None:
    handoff = ToolCall(name="handoff", arguments={"reason": "refund above my limit"}, id="h1")
    with FakeFeishu() as fake, FakeOpenAIServer() as model:
        model.script(Reply(tool_calls=(handoff,)), Reply(text="Welcome back."))
        fake.add_chat(OPS)
        access = {
            "dm_policy": "open", "admins": ["feishu:ou_admin"],
            "on_call": [{"channel": "feishu", "chat": OPS, "chat_type": "group"}],
        }  # fmt: skip
        agent = {"model": {"base_url": model.base_url, "api_key": "sk-test", "name": "m"}}
        settings = feishu_settings(tmp_path, fake, access=access, agent=agent)
        async with feishu_daemon(settings, fake, EmbeddedBackend(settings, max_retries=0)) as run:
            asked = await run.send(**at_bot(fake, "refund 5000 EUR or get me a person"))
            await feishu_wait(fake, GROUP, "A human will take it from here: refund above my")
            await feishu_wait(fake, OPS, "Handoff requested in feishu")
            await run.settle()
            (note,) = live(fake)
            chain = {"root_id": asked, "parent_id": note.message_id}
            await run.send("hello?", chat_id=GROUP, chat_type="group", **chain)
            await outcome(run.kernel, "muted")
            await run.settle()
            (mute,) = await active_mutes(run.kernel)
            handed_off = texts(fake, GROUP)
            asked_model = len(model.requests)
            await run.send(**at_bot(fake, "/unmute"), **chain)
            await feishu_wait(fake, GROUP, "Unmuted here")
            await run.send("I'm back", chat_id=GROUP, chat_type="group", **chain)
            await feishu_wait(fake, GROUP, "Welcome back.")
            await run.settle()
            announced = texts(fake, OPS)
    assert (mute.key.chat_id, mute.key.topic_id, mute.key.user_id) == (GROUP, asked, None)
    assert mute.reason == "handoff: refund above my limit"
    assert asked_model == 1  # the turn ended in the tool: the model was not asked again
    assert handed_off == ["🙋 A human will take it from here: refund above my limit"]
    assert note.parent_id == asked  # the note answers the message that asked
    assert announced == [
        f"🙋 Handoff requested in feishu {GROUP} topic={asked} (asked by ou_u1): "
        "refund above my limit"
    ]
    assert TYPING not in [r["emoji_type"] for r in fake.reactions(asked)]


async def test_listen_gives_the_last_chatter_and_answers_only_the_mention(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    agent = FakeAgent()
    with FakeFeishu() as fake:
        settings = feishu_settings(
            tmp_path, fake, feishu={"group_policy": "listen"},
            conversations={"listen": {"max_messages": 3, "max_age_minutes": 30}},
        )  # fmt: skip
        async with feishu_daemon(settings, fake, agent) as run:
            chatter = ["is the deploy done?", "no, CI is red", "flaky test again", "which one?"]
            heard = []
            for number, line in enumerate(chatter, start=1):
                who = "ou_carol" if number % 2 else "ou_dave"
                sent = await run.send(line, chat_id=GROUP, chat_type="group", sender_open_id=who)
                heard.append(sent)
            await outcome(run.kernel, "heard", len(chatter))
            await run.send(**at_bot(fake, "can you summarise?"))
            await feishu_wait(fake, GROUP, "echo: can you summarise?")
            await run.settle()
            assert texts(fake, GROUP) == ["echo: can you summarise?"]
            (only,) = agent.runs
            assert only.turn.text == "can you summarise?"
            context = only.turn.chat_context.splitlines()
            assert context[0] == CONTEXT_HEADER
            assert [line.split("] ", 1)[1] for line in context[1:]] == [
                "ou_dave: no, CI is red",
                "ou_carol: flaky test again",
                "ou_dave: which one?",
            ]  # the oldest of four is past max_messages: 3
            assert run.kernel.conversations.sessions.heard.held == 0  # given once
            await run.send(**at_bot(fake, "and now?"))
            await agent.wait_runs(2)
            assert agent.runs[1].turn.chat_context == ""
            await run.settle()
    assert all(reacted(fake, message_id) == [] for message_id in heard)
    (line,) = [r.getMessage() for r in caplog.records if WARNING in r.getMessage()]
    assert "channel feishu" in line
    assert "im:message.group_msg" in line
    assert "is the deploy done" not in caplog.text  # chatter is never logged
