"""The Feishu adapter with lark-oapi's real long connection (and in HTTP events mode), through
the real daemon against FakeFeishu: conversations, threads, redelivery, streaming cards."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.channels.feishu_support import (
    DM,
    GROUP,
    at_bot,
    feishu_daemon,
    feishu_settings,
    texts,
    wait_text,
)
from tests.fakes.agent import FakeAgent
from tests.fakes.feishu_api import FakeFeishu


@pytest.fixture(params=["websocket", "webhook"])
def mode(request: pytest.FixtureRequest) -> str:
    value: str = request.param
    return value


async def test_dm_text_is_answered_with_a_reply_card(tmp_path: Path, mode: str) -> None:
    with FakeFeishu() as fake:
        agent = FakeAgent()
        settings = feishu_settings(tmp_path, fake, mode=mode)
        async with feishu_daemon(settings, fake, agent) as run:
            asked = await run.send("hello there", chat_id=DM)
            await wait_text(fake, DM, "echo: hello there")
            await run.settle()
        [answer] = fake.sent_messages(DM)
        assert answer.msg_type == "interactive"
        assert answer.parent_id == asked
        assert agent.runs[0].turn.text == "hello there"


async def test_group_mention_rules_and_reply_chain(tmp_path: Path, mode: str) -> None:
    with FakeFeishu() as fake:
        agent = FakeAgent()
        settings = feishu_settings(tmp_path, fake, mode=mode)
        async with feishu_daemon(settings, fake, agent) as run:
            await run.send("nobody asked me", chat_id=GROUP, chat_type="group")
            first = await run.send(**at_bot(fake, "first"))
            await wait_text(fake, GROUP, "echo: first")
            [answer] = fake.sent_messages(GROUP)
            # a reply to the bot's answer continues without a mention
            await run.send("second", chat_id=GROUP, chat_type="group", root_id=first,
                           parent_id=answer.message_id)  # fmt: skip
            await wait_text(fake, GROUP, "echo: second")
            await run.send("@_all third", chat_id=GROUP, chat_type="group")
            await run.settle()
        assert [r.turn.text for r in agent.runs] == ["first", "second"]
        assert agent.runs[0].thread_id == agent.runs[1].thread_id
        answers = fake.sent_messages(GROUP)
        assert {m.root_id for m in answers} == {first}
        assert not any(m.reply_in_thread for m in answers)


async def test_a_topic_is_one_conversation_answered_in_the_thread(
    tmp_path: Path, mode: str
) -> None:
    with FakeFeishu() as fake:
        agent = FakeAgent()
        settings = feishu_settings(tmp_path, fake, mode=mode)
        async with feishu_daemon(settings, fake, agent) as run:
            root = fake.message_payload("topic start", chat_id=GROUP, chat_type="group",
                                        thread_id="omt_topic1")  # fmt: skip
            root_id = root["event"]["message"]["message_id"]
            await run.send(**at_bot(fake, "in the topic"), root_id=root_id, parent_id=root_id,
                           thread_id="omt_topic1")  # fmt: skip
            await wait_text(fake, GROUP, "echo: in the topic")
            await run.send("more", chat_id=GROUP, chat_type="group", root_id=root_id,
                           parent_id=root_id, thread_id="omt_topic1")  # fmt: skip
            await wait_text(fake, GROUP, "echo: more")
            await run.settle()
        assert len({r.thread_id for r in agent.runs}) == 1
        answers = fake.sent_messages(GROUP)
        assert {m.thread_id for m in answers} == {"omt_topic1"}
        assert all(m.reply_in_thread for m in answers)


async def test_a_redelivered_event_is_answered_once(tmp_path: Path, mode: str) -> None:
    with FakeFeishu() as fake:
        agent = FakeAgent()
        settings = feishu_settings(tmp_path, fake, mode=mode)
        async with feishu_daemon(settings, fake, agent) as run:
            payload = fake.message_payload("only once", chat_id=DM)
            if run.events_url:
                await run.post(payload)
                payload["header"]["event_id"] = "again-1"
                await run.post(payload)
            else:
                event_id = fake.push_event(payload)
                await fake.await_ack(event_id)
                again = fake.redeliver(event_id)
                ack = await fake.await_ack(again)
                assert ack.code == 200
            await wait_text(fake, DM, "echo: only once")
            await run.settle()
        assert len(agent.runs) == 1
        assert texts(fake, DM) == ["echo: only once"]


async def test_an_unknown_event_type_is_acknowledged(tmp_path: Path) -> None:
    with FakeFeishu() as fake:
        settings = feishu_settings(tmp_path, fake)
        async with feishu_daemon(settings, fake, FakeAgent()):
            payload = fake.message_payload("x", chat_id=DM)
            payload["header"]["event_type"] = "im.chat.member.bot.added_v1"
            ack = await fake.await_ack(fake.push_event(payload))
        assert ack.code == 200


async def test_an_event_split_over_several_frames_is_reassembled(tmp_path: Path) -> None:
    with FakeFeishu() as fake:
        agent = FakeAgent()
        settings = feishu_settings(tmp_path, fake)
        async with feishu_daemon(settings, fake, agent) as run:
            fake.push_message("in three parts " * 20, chat_id=DM, parts=3)
            await wait_text(fake, DM, "echo: in three parts")
            await run.settle()
        assert len(agent.runs) == 1
