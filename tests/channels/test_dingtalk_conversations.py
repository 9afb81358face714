"""DingTalk conversations through the real daemon against FakeDingTalk: 1:1 and group chats,
group members kept apart, redelivered callbacks run once, acks only after the journal, and
questions answered by the next plain message."""

from __future__ import annotations

from pathlib import Path

from tests.channels.dingtalk_support import (
    ALICE,
    BOB,
    GROUP,
    WAIT_S,
    dingtalk_daemon,
    dingtalk_settings,
    texts,
    wait_text,
)
from tests.fakes.agent import FakeAgent
from tests.fakes.dingtalk_api import FakeDingTalk

ACK_WITHIN_S = 3.0


async def test_a_one_to_one_message_is_answered_through_its_session_webhook(
    tmp_path: Path,
) -> None:
    with FakeDingTalk() as fake:
        agent = FakeAgent()
        async with dingtalk_daemon(dingtalk_settings(tmp_path, fake), fake, agent) as run:
            frame = fake.push_message("hello there", sender_staff_id=ALICE)
            await wait_text(fake, ALICE, "echo: hello there")
            ack = await fake.await_ack(frame)
            await run.settle()
        assert ack.code == 200
        [sent] = fake.sent_messages(ALICE)
        assert (sent.via, sent.msgtype) == ("session", "markdown")
        assert sent.title
        assert fake.protocol_errors == []
        [opened] = fake.open_requests
        topics = [s["topic"] for s in opened["subscriptions"]]
        assert topics == ["/v1.0/im/bot/messages/get"]


async def test_group_members_have_their_own_conversations_and_are_at_mentioned(
    tmp_path: Path,
) -> None:
    with FakeDingTalk() as fake:
        agent = FakeAgent()
        async with dingtalk_daemon(dingtalk_settings(tmp_path, fake), fake, agent) as run:
            for who in (ALICE, BOB):
                fake.push_message(
                    f"hi from {who}", conversation_type="2", conversation_id=GROUP,
                    sender_staff_id=who, at_bot=True,
                )  # fmt: skip
                await wait_text(fake, GROUP, f"echo: hi from {who}")
            await run.settle()
        threads = {run.thread_id for run in agent.runs}
        assert len(threads) == 2
        replies = fake.sent_messages(GROUP)
        assert [r.at_user_ids for r in replies] == [(ALICE,), (BOB,)]
        assert [r.text.rsplit(maxsplit=1)[-1] for r in replies] == [f"@{ALICE}", f"@{BOB}"]


async def test_a_group_message_without_the_bot_mentioned_is_ignored(tmp_path: Path) -> None:
    with FakeDingTalk() as fake:
        agent = FakeAgent()
        async with dingtalk_daemon(dingtalk_settings(tmp_path, fake), fake, agent) as run:
            quiet = fake.push_message(
                "just chatting", conversation_type="2", conversation_id=GROUP, at_bot=False
            )
            await fake.await_ack(quiet)
            fake.push_message("now you", conversation_type="2", conversation_id=GROUP, at_bot=True)
            await wait_text(fake, GROUP, "echo: now you")
            await run.settle()
        assert [r.turn.text for r in agent.runs] == ["now you"]


async def test_a_redelivered_callback_runs_once(tmp_path: Path) -> None:
    with FakeDingTalk() as fake:
        agent = FakeAgent()
        async with dingtalk_daemon(dingtalk_settings(tmp_path, fake), fake, agent) as run:
            payload = fake.message_payload("only once", sender_staff_id=ALICE)
            first = fake.push_callback(payload)
            await fake.await_ack(first)
            again = fake.push_callback(payload)
            await fake.await_ack(again)
            await wait_text(fake, ALICE, "echo: only once")
            await run.settle()
        assert len(agent.runs) == 1
        assert texts(fake, ALICE) == ["echo: only once"]


async def test_the_callback_is_acked_within_3_s_while_the_model_is_slow(tmp_path: Path) -> None:
    with FakeDingTalk() as fake:
        agent = FakeAgent()
        release = agent.hold("slow")
        async with dingtalk_daemon(dingtalk_settings(tmp_path, fake), fake, agent) as run:
            frame = fake.push_message("slow question", sender_staff_id=ALICE)
            await fake.await_ack(frame, timeout=ACK_WITHIN_S)
            await agent.wait_runs(1)
            assert texts(fake, ALICE) == []  # acked while the model still thinks
            release.set()
            await wait_text(fake, ALICE, "echo: slow question")
            await run.settle()


async def test_a_question_is_answered_by_the_next_plain_message(tmp_path: Path) -> None:
    with FakeDingTalk() as fake:
        agent = FakeAgent()
        async with dingtalk_daemon(dingtalk_settings(tmp_path, fake), fake, agent) as run:
            fake.push_message("ask: Which colour? | red | blue", sender_staff_id=ALICE)
            await wait_text(fake, ALICE, "Which colour?")
            [question] = texts(fake, ALICE)
            assert "1" in question
            assert "blue" in question
            fake.push_message("2", sender_staff_id=ALICE)
            await wait_text(fake, ALICE, "answer: blue")
            await run.settle()
        assert agent.runs[-1].turn.resume_answer == "blue"


async def test_long_markdown_arrives_in_order_within_the_platform_limits(
    tmp_path: Path,
) -> None:
    paragraphs = [f"**{i:03d}** 钉钉 long answer paragraph with some text." for i in range(300)]
    code = "```python\n" + "\n".join(f"print({i})" for i in range(200)) + "\n```"
    answer = "\n\n".join([*paragraphs[:150], code, *paragraphs[150:]])
    with FakeDingTalk() as fake:
        agent = FakeAgent(reply_override=answer)
        async with dingtalk_daemon(dingtalk_settings(tmp_path, fake), fake, agent) as run:
            # an expired session webhook: the OpenAPI path, with its msgParam limit, is used
            fake.push_message("long please", sender_staff_id=ALICE, session_ttl_s=-1)
            await fake.await_until(lambda: any("**299**" in t for t in texts(fake, ALICE)), WAIT_S)
            await run.settle()
        sent = fake.sent_messages(ALICE)
        assert len(sent) > 1
        for message in sent:
            assert len(message.text.encode()) <= 5000 + 200
            assert message.via == "otom"
            assert len(str(message.raw["msgParam"]).encode()) <= 15000
            assert message.text.count("```") % 2 == 0
        joined = "\n".join(texts(fake, ALICE))
        order = [joined.index(f"**{i:03d}**") for i in range(300)]
        assert order == sorted(order)
