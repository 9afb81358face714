"""Human takeover on DingTalk: the real adapter and Stream SDK against the strict
FakeDingTalk (design "Human takeover").

A robot gets a group message only when it is @-mentioned, and every 1:1 message; DingTalk has
no reply threads (groups default to one conversation per member), so there is no yield to a
human here: a colleague's reply never reaches the bot unless it mentions the bot, and one that
mentions it is answered as anyone. What is tested: ``/mute`` → no answer → ``/unmute`` →
answered, in a 1:1 chat and in a group member's conversation (another member is answered
meanwhile), and the embedded agent's ``handoff`` tool through the fake model.
"""

from __future__ import annotations

from pathlib import Path

from agent.embedded import EmbeddedBackend
from bot.kernel import Kernel
from bot.messages import utc_now
from bot.ports.mutes import Mute, mutes_of
from tests.channels.dingtalk_support import (
    ALICE,
    BOB,
    GROUP,
    dingtalk_daemon,
    dingtalk_settings,
    texts,
    wait_text,
)
from tests.channels.revision_support import outcome
from tests.fakes.agent import FakeAgent
from tests.fakes.dingtalk_api import FakeDingTalk
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall

OPS = "cidOnCall1"
NICKS = {ALICE: "Alice", BOB: "Bob"}


def say(fake: FakeDingTalk, text: str, who: str = ALICE, *, in_group: bool = False) -> None:
    """A 1:1 message from ``who``, or (``in_group``) one that @-mentions the robot in GROUP."""
    if in_group:
        fake.push_message(
            text, sender_staff_id=who, sender_nick=NICKS[who], conversation_type="2",
            conversation_id=GROUP, at_bot=True,
        )  # fmt: skip
    else:
        fake.push_message(text, sender_staff_id=who, sender_nick=NICKS[who])


async def active_mutes(kernel: Kernel) -> list[Mute]:
    table = mutes_of(kernel.store)
    assert table is not None
    return await table.active(utc_now())


async def test_mute_and_unmute_in_a_dm_and_in_a_members_group_conversation(
    tmp_path: Path,
) -> None:
    agent = FakeAgent()
    with FakeDingTalk() as fake:
        async with dingtalk_daemon(dingtalk_settings(tmp_path, fake), fake, agent) as run:
            say(fake, "/mute 2h")
            await wait_text(fake, ALICE, "Muted in this chat for 2h")
            say(fake, "anyone?")
            await outcome(run.kernel, "muted")
            say(fake, "/unmute")
            await wait_text(fake, ALICE, "Unmuted in this chat")
            say(fake, "hello again")
            await wait_text(fake, ALICE, "echo: hello again")

            say(fake, "/mute", in_group=True)  # Alice's own
            await wait_text(fake, GROUP, "Muted here until `/unmute`")
            (mute,) = await active_mutes(run.kernel)
            say(fake, "are you there?", in_group=True)
            await outcome(run.kernel, "muted", 2)
            say(fake, "and for me?", BOB, in_group=True)
            await wait_text(fake, GROUP, "echo: and for me?")
            say(fake, "/unmute", in_group=True)
            await wait_text(fake, GROUP, "Unmuted here")
            say(fake, "now?", in_group=True)
            await wait_text(fake, GROUP, "echo: now?")
            await run.settle()
            assert await active_mutes(run.kernel) == []
            shown = texts(fake)
    assert (mute.key.chat_id, mute.key.topic_id, mute.key.user_id) == (GROUP, None, ALICE)
    assert not any("echo: anyone?" in t or "echo: are you there?" in t for t in shown)
    assert [r.turn.text for r in agent.runs] == ["hello again", "and for me?", "now?"]


async def test_handoff_tool_mutes_notes_and_tells_the_on_call_group(tmp_path: Path) -> None:
    handoff = ToolCall(name="handoff", arguments={"reason": "asks for a contract change"})
    with FakeDingTalk() as fake, FakeOpenAIServer() as model:
        model.script(Reply(tool_calls=(handoff,)), Reply(text="Welcome back."))
        fake.message_payload("on call here", conversation_type="2", conversation_id=OPS)
        access = {
            "dm_policy": "open", "admins": [f"dingtalk:{ALICE}"],
            "on_call": [{"channel": "dingtalk", "chat": OPS, "chat_type": "group"}],
        }  # fmt: skip
        agent = {"model": {"base_url": model.base_url, "api_key": "sk-test", "name": "m"}}
        settings = dingtalk_settings(tmp_path, fake, access=access, agent=agent)
        backend = EmbeddedBackend(settings, max_retries=0)
        async with dingtalk_daemon(settings, fake, backend) as run:
            say(fake, "change my contract, please get a person", BOB)
            await wait_text(fake, BOB, "A human will take it from here: asks for a contract")
            await wait_text(fake, OPS, "Handoff requested in dingtalk")
            say(fake, "hello?", BOB)
            await outcome(run.kernel, "muted")
            await run.settle()
            (mute,) = await active_mutes(run.kernel)
            handed_off, announced = texts(fake, BOB), texts(fake, OPS)
            asked_model = len(model.requests)
            say(fake, "/unmute", BOB)  # access.participants_can_mute
            await wait_text(fake, BOB, "Unmuted in this chat")
            say(fake, "I'm back", BOB)
            await wait_text(fake, BOB, "Welcome back.")
            await run.settle()
    assert (mute.key.topic_id, mute.key.user_id) == (None, None)
    assert mute.reason == "handoff: asks for a contract change"
    assert asked_model == 1  # the turn ended in the tool: the model was not asked again
    assert handed_off == ["🙋 A human will take it from here: asks for a contract change"]
    (line,) = announced
    assert line.startswith("🙋 Handoff requested in dingtalk ")
    assert line.endswith("(asked by Bob): asks for a contract change")
