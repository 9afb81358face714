"""The real adapter and real python-telegram-bot against FakeTelegram, through the daemon:
DMs with streaming, groups, forum topics, replies to the bot and the command menu (design §4, §14).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bot.ports import FinalAnswer, TextDelta
from tests.channels.telegram_support import (
    mention,
    telegram_daemon,
    telegram_settings,
    texts,
    wait_text,
)
from tests.fakes.agent import FakeAgent
from tests.fakes.scripted_agent import ScriptedAgent
from tests.fakes.telegram_api import FakeTelegram

GROUP = -1001234
FORUM = -1005678


def _reply_id(params: dict[str, str]) -> int | None:
    raw = params.get("reply_parameters")
    return int(json.loads(raw)["message_id"]) if raw else None


async def test_a_dm_streams_edits_then_the_final(tmp_path: Path) -> None:
    agent = ScriptedAgent()
    with FakeTelegram() as fake:
        async with telegram_daemon(telegram_settings(tmp_path, fake), agent) as run:
            asked = fake.push_message("hi bot")["message"]["message_id"]
            await fake.await_call("sendChatAction", lambda c: c.params["action"] == "typing")
            agent.feed(TextDelta(text="Hello"))
            placeholder = await fake.await_call("sendMessage")
            assert placeholder.params["text"] == "Hello ▍"
            assert "parse_mode" not in placeholder.params  # progress is plain text
            assert _reply_id(placeholder.params) == asked
            agent.feed(TextDelta(text=" world"))
            await fake.await_call("editMessageText", lambda c: c.params["text"] == "Hello world ▍")
            agent.feed(FinalAnswer(text="Hello **world**"))
            final = await fake.await_call("editMessageText", lambda c: "entities" in c.params)
            await run.settle()
        assert final.params["text"] == "Hello world"
        assert json.loads(final.params["entities"]) == [{"type": "bold", "offset": 6, "length": 5}]
        assert texts(fake, 42) == ["Hello world"]
        assert agent.turns[0].text == "hi bot"


async def test_the_command_menu_lists_user_commands_only(tmp_path: Path) -> None:
    with FakeTelegram() as fake:
        async with telegram_daemon(telegram_settings(tmp_path, fake), FakeAgent()):
            registered = fake.calls("setMyCommands")
            fake.push_message("/help@fake_bot", chat_id=GROUP, chat_type="supergroup")
            await wait_text(fake, GROUP, "/new")
    names = {c["command"] for c in json.loads(registered[0].params["commands"])}
    assert {"help", "new", "stop", "status", "whoami"} <= names
    assert "admin" not in names


async def test_a_group_message_needs_a_mention(tmp_path: Path) -> None:
    agent = FakeAgent()
    group: dict[str, Any] = {"chat_id": GROUP, "chat_type": "supergroup"}
    with FakeTelegram() as fake:
        async with telegram_daemon(telegram_settings(tmp_path, fake), agent) as run:
            fake.push_message("just chatting among humans", user_id=7, **group)
            text = "@fake_bot what is up"
            asked = fake.push_message(text, entities=mention(text), **group)
            await wait_text(fake, GROUP, "echo: what is up")
            await run.settle()
        assert [r.turn.text for r in agent.runs] == ["what is up"]
        assert {_reply_id(c.params) for c in fake.calls("sendMessage")} == {
            asked["message"]["message_id"]
        }


async def test_a_forum_topic_is_its_own_conversation_answered_in_the_topic(
    tmp_path: Path,
) -> None:
    agent = FakeAgent()
    topic: dict[str, Any] = {"chat_id": FORUM, "chat_type": "supergroup", "is_forum": True}
    with FakeTelegram() as fake:
        async with telegram_daemon(telegram_settings(tmp_path, fake), agent) as run:
            text = "@fake_bot plan the launch"
            fake.push_message(text, entities=mention(text), message_thread_id=77, **topic)
            await wait_text(fake, FORUM, "echo: plan the launch")
            fake.push_message("and the budget?", message_thread_id=77, **topic)
            await wait_text(fake, FORUM, "echo: and the budget?")
            fake.push_message("@fake_bot elsewhere", entities=mention("@fake_bot elsewhere"),
                              message_thread_id=88, **topic)  # fmt: skip
            await wait_text(fake, FORUM, "echo: elsewhere")
            await run.settle()
        first, second, other = agent.runs
        assert first.thread_id == second.thread_id != other.thread_id
        threads = {
            c.params.get("message_thread_id")
            for method in ("sendMessage", "sendChatAction")
            for c in fake.calls(method)
        }
        assert threads == {"77", "88"}
        assert all(m.get("is_topic_message") for m in fake.chat_messages(FORUM))


async def test_replying_to_the_bot_continues_its_thread(tmp_path: Path) -> None:
    agent = FakeAgent()
    group: dict[str, Any] = {"chat_id": GROUP, "chat_type": "supergroup"}
    with FakeTelegram() as fake:
        async with telegram_daemon(telegram_settings(tmp_path, fake), agent) as run:
            text = "@fake_bot remember 7"
            fake.push_message(text, entities=mention(text), **group)
            await wait_text(fake, GROUP, "echo: remember 7")
            answer = fake.chat_messages(GROUP)[-1]["message_id"]
            fake.push_message("a new topic", user_id=8, **group)  # not addressed: ignored
            reply = fake.push_message("what did I say?", reply_to_message_id=answer, **group)
            await wait_text(fake, GROUP, "echo: what did I say?")
            await run.settle()
        first, second = agent.runs
        assert second.thread_id == first.thread_id
        last = fake.calls("sendMessage")[-1]
        assert _reply_id(last.params) == reply["message"]["message_id"]


async def test_a_queued_message_gets_the_eyes_reaction(tmp_path: Path) -> None:
    agent = ScriptedAgent()
    with FakeTelegram() as fake:
        async with telegram_daemon(telegram_settings(tmp_path, fake), agent) as run:
            fake.push_message("first")
            await fake.await_call("sendChatAction")
            second = fake.push_message("second")["message"]["message_id"]
            reaction = await fake.await_call("setMessageReaction")
            assert int(reaction.params["message_id"]) == second
            assert json.loads(reaction.params["reaction"]) == [{"type": "emoji", "emoji": "👀"}]
            agent.feed(FinalAnswer(text="one"))
            agent.feed(FinalAnswer(text="two"))
            await wait_text(fake, 42, "two")
            await run.settle()
        assert len(fake.calls("setMessageReaction")) == 1  # working/done are no-ops
        assert agent.turns[1].text == "second"
