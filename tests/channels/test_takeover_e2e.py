"""Human takeover against the strict Telegram and Slack fakes with the real adapters (design
"Human takeover"): /mute → no answer → /unmute → answers; a human's reply in the thread of a
running turn makes the bot yield (nothing posted, the placeholder gone); the embedded agent's
``handoff`` tool through the fake model posts the note, mutes and tells the on-call chat."""

from __future__ import annotations

from pathlib import Path

from agent.embedded import EmbeddedBackend
from bot.messages import utc_now
from bot.ports.mutes import mutes_of
from tests.bot.harness import routed
from tests.channels.slack_support import mention, slack_daemon, slack_settings
from tests.channels.slack_support import texts as slack_texts
from tests.channels.slack_support import wait_text as slack_wait
from tests.channels.telegram_support import telegram_daemon, telegram_settings, texts, wait_text
from tests.fakes.agent import FakeAgent
from tests.fakes.common.waiting import eventually
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.fakes.slack_api import FakeSlack
from tests.fakes.telegram_api import FakeTelegram

FORUM, TOPIC, OPS = -100555, 9, -100900
CHANNEL = "C0TEAM01"


async def test_telegram_mute_unmute_and_a_yield_in_a_forum_topic(tmp_path: Path) -> None:
    with FakeTelegram() as fake:
        access = {"dm_policy": "open", "admins": ["telegram:1"], "humans": ["telegram:77"]}
        settings = telegram_settings(tmp_path, fake, access=access)
        agent = FakeAgent()
        release = agent.hold("slow")
        async with telegram_daemon(settings, agent) as run:
            fake.push_message("/mute 30m")
            await wait_text(fake, 42, "Muted in this chat for 30m")
            fake.push_message("anyone?")
            await routed(run.kernel, 2)
            fake.push_message("/unmute")
            await wait_text(fake, 42, "Unmuted in this chat")
            fake.push_message("hello again")
            await wait_text(fake, 42, "echo: hello again")
            fake.push_message(
                "@fake_bot slow: why is the build red?", chat_id=FORUM, chat_type="supergroup",
                is_forum=True, message_thread_id=TOPIC,
                entities=[{"type": "mention", "offset": 0, "length": 9}],
            )  # fmt: skip
            await agent.wait_runs(2)
            await wait_text(fake, FORUM, "working")  # the placeholder shows
            fake.push_message(
                "I'll take this one", chat_id=FORUM, chat_type="supergroup", is_forum=True,
                message_thread_id=TOPIC, user_id=77, first_name="Sam", username="sam",
            )  # fmt: skip
            await eventually(lambda: not any("working" in t for t in texts(fake, FORUM)))
            release.set()
            await run.settle()
            shown = texts(fake, FORUM)
            table = mutes_of(run.kernel.store)
            assert table is not None
            muted = {m.key for m in await table.active(utc_now())}
    assert shown in ([], ["↪️ Left to a teammate."])  # the placeholder deleted, or one line
    assert {(key.chat_id, key.topic_id) for key in muted} == {(str(FORUM), f"topic:{TOPIC}")}
    assert [r.turn.text for r in agent.runs] == ["hello again", "slow: why is the build red?"]
    assert "echo: anyone?" not in texts(fake, 42)


async def test_slack_thread_yield_and_a_thread_mute(tmp_path: Path) -> None:
    with FakeSlack() as fake:
        access = {"dm_policy": "open", "admins": ["slack:UADMIN"], "humans": ["slack:USAM0001"]}
        settings = slack_settings(tmp_path, fake, access=access)
        agent = FakeAgent()
        release = agent.hold("slow")
        async with slack_daemon(settings, fake, agent) as run:
            root = fake.push_message(
                mention("slow: refund?"), channel=CHANNEL, channel_type="channel"
            )
            await agent.wait_runs(1)
            await slack_wait(fake, CHANNEL, "working")
            fake.push_message(
                "on it", channel=CHANNEL, channel_type="channel", thread_ts=root, user="USAM0001"
            )
            await fake.await_until(
                lambda: not any("working" in t for t in slack_texts(fake, CHANNEL)), 5.0
            )
            release.set()
            await run.settle()
            after_yield = slack_texts(fake, CHANNEL)
            asker = fake.message(CHANNEL, root) or {}
            marks = {str(r.get("name")) for r in asker.get("reactions") or ()}
            fake.push_message(
                mention("/unmute"), channel=CHANNEL, channel_type="channel", thread_ts=root
            )
            await slack_wait(fake, CHANNEL, "Unmuted here")
            fake.push_message(
                "and the invoice?", channel=CHANNEL, channel_type="channel", thread_ts=root
            )
            await slack_wait(fake, CHANNEL, "echo: and the invoice?")
            fake.push_message(
                mention("/mute 1h"), channel=CHANNEL, channel_type="channel", thread_ts=root
            )
            await slack_wait(fake, CHANNEL, "Muted here for 1h")
            fake.push_message(
                "still there?", channel=CHANNEL, channel_type="channel", thread_ts=root
            )
            await routed(run.kernel, 6)
            await run.settle()
            final = slack_texts(fake, CHANNEL)
    assert after_yield == []  # the placeholder was deleted, nothing else was posted
    assert "eyes" not in marks  # the asker's message no longer says the bot is working
    assert not any("echo: still there?" in text for text in final)
    assert [r.turn.text for r in agent.runs] == ["slow: refund?", "and the invoice?"]


async def test_telegram_handoff_tool_mutes_notes_and_tells_on_call(tmp_path: Path) -> None:
    handoff = ToolCall(
        name="handoff", arguments={"reason": "wants to cancel the contract"}, id="h1"
    )
    with FakeTelegram() as fake, FakeOpenAIServer() as model:
        model.script(Reply(tool_calls=(handoff,)), Reply(text="Welcome back."))
        access = {
            "dm_policy": "open", "admins": ["telegram:1"],
            "on_call": [{"channel": "telegram", "chat": str(OPS), "chat_type": "group"}],
        }  # fmt: skip
        agent = {"model": {"base_url": model.base_url, "api_key": "sk-test", "name": "m"}}
        settings = telegram_settings(tmp_path, fake, access=access, agent=agent)
        fake.push_message("morning all", chat_id=OPS, chat_type="group", user_id=5)  # known chat
        async with telegram_daemon(settings, EmbeddedBackend(settings, max_retries=0)) as run:
            await routed(run.kernel, 1)
            fake.push_message("I want to cancel, get me a person")
            await wait_text(
                fake, 42, "A human will take it from here: wants to cancel the contract"
            )
            await wait_text(fake, OPS, "Handoff requested in telegram 42")
            await run.settle()
            fake.push_message("hello?")
            await routed(run.kernel, 3)
            await run.settle()
            table = mutes_of(run.kernel.store)
            assert table is not None
            (mute,) = await table.active(utc_now())
            handed_off = texts(fake, 42)
            asked = len(model.requests)
            fake.push_message("/unmute")  # the user may (access.participants_can_mute)
            await wait_text(fake, 42, "Unmuted in this chat")
            fake.push_message("I'm back")
            await wait_text(fake, 42, "Welcome back.")  # the thread goes on after the handoff
    assert (mute.key.chat_id, mute.key.topic_id, mute.key.user_id) == ("42", None, None)
    assert mute.reason == "handoff: wants to cancel the contract"
    assert asked == 1  # the turn ended in the tool: the model was not asked again
    assert handed_off == ["🙋 A human will take it from here: wants to cancel the contract"]
