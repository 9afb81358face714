"""Clarifying questions and their answers (design §7)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

from bot.messages import ButtonPress, ChatType, ConversationKey, OutboundText, TextEdit, utc_now
from bot.pipeline.clarifications import Clarifications
from bot.ports import ChannelCapabilities
from bot.records import ChatRef, Clarification, ClarificationState
from store.sqlite import SqliteStore
from tests.bot.harness import make_settings, routed, running
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import PLAIN_CAPS, FakeChannel, dm, group

THREADS_NO_BUTTONS = ChannelCapabilities(text_limit=4000, threads=True)


async def test_button_press_answers_and_resumes_the_same_thread(tmp_path: Path) -> None:
    channel, agent = FakeChannel(), FakeAgent()
    async with running(make_settings(tmp_path), [channel], agent):
        await channel.inject(dm("ask: Which colour? | red | blue", message_id="1"))
        question = await channel.wait_text("Which colour?")
        assert isinstance(question.delivery, OutboundText)
        labels = [button.label for button in question.delivery.buttons]
        assert labels == ["red", "blue"]
        payload = question.delivery.buttons[1].payload
        press = ButtonPress(payload=payload, message_id=question.message_id)
        await channel.inject(dm("", message_id="cb-1", button=press))
        await channel.wait_text("answer: blue")
        # A second press of the same question is stale.
        await channel.inject(dm("", message_id="cb-2", button=press))
        await channel.wait_text("already answered")
    assert [run.thread_id for run in agent.runs] == ["t1", "t1"]
    assert agent.runs[1].turn.resume_answer == "blue"


async def test_numbered_options_and_plain_message_answer(tmp_path: Path) -> None:
    channel, agent = FakeChannel(caps=PLAIN_CAPS), FakeAgent()
    async with running(make_settings(tmp_path), [channel], agent):
        await channel.inject(dm("ask: Size? | small | large", message_id="1"))
        question = await channel.wait_text("Size?")
        assert "1. small\n2. large" in question.text
        await channel.inject(dm("2", message_id="2"))
        await channel.wait_text("answer: large")


async def test_answer_in_a_group_without_mention_by_the_asked_user_only(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, conversations={"group_scope": "topic"})
    channel, agent = FakeChannel(), FakeAgent()
    async with running(settings, [channel], agent) as daemon:
        await channel.inject(group("ask: Deploy? | yes | no", message_id="10", mentions_bot=True))
        await channel.wait_text("Deploy?")
        # Someone else talking in the group is neither an answer nor addressed.
        await channel.inject(group("lunch?", message_id="11", user="bob"))
        await routed(daemon.kernel, 2)
        # The asked user's next plain message answers, although it would start a new topic.
        await channel.inject(group("yes", message_id="12"))
        await channel.wait_text("answer: yes")
    assert [run.turn.resume_answer for run in agent.runs] == [None, "yes"]
    assert agent.runs[1].thread_id == agent.runs[0].thread_id


async def test_reply_to_the_question_message_answers_it(tmp_path: Path) -> None:
    channel, agent = FakeChannel(), FakeAgent()
    async with running(make_settings(tmp_path), [channel], agent):
        await channel.inject(dm("ask: First? | a | b", message_id="1"))
        first = await channel.wait_text("First?")
        await channel.inject(dm("/new", message_id="2"))
        await channel.wait_text("Started a new conversation")
        await channel.inject(dm("ask: Second? | c | d", message_id="3"))
        await channel.wait_text("Second?")
        await channel.inject(dm("custom", message_id="4", reply_to_message_id=first.message_id))
        await channel.wait_text("answer: custom")
    # /new cancelled the first question, so only a reply to it could have matched... it was
    # cancelled, so the reply answered the pending second question instead.
    assert agent.runs[-1].turn.resume_answer == "custom"


async def test_several_pending_questions_are_answered_in_order(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, conversations={"group_scope": "topic"})
    channel, agent = FakeChannel(caps=THREADS_NO_BUTTONS), FakeAgent()
    first, second = agent.hold("#1"), agent.hold("#2")
    async with running(settings, [channel], agent):
        # Two topics started before either question exists, so neither message is an answer.
        await channel.inject(group("ask: One #1 | x", message_id="1", mentions_bot=True))
        await channel.inject(group("ask: Two #2 | y", message_id="2", mentions_bot=True))
        await agent.wait_runs(2)
        first.set()
        await channel.wait_text("One #1")
        second.set()
        await channel.wait_text("Two #2")
        await channel.inject(group("first answer", message_id="3"))
        await channel.wait_text("answer: first answer")
        await channel.inject(group("second answer", message_id="4"))
        await channel.wait_text("answer: second answer")
    asked = {run.turn.text: run.thread_id for run in agent.runs[:2]}
    resumed = [(run.thread_id, run.turn.resume_answer) for run in agent.runs[2:]]
    assert resumed == [
        (asked["ask: One #1 | x"], "first answer"),
        (asked["ask: Two #2 | y"], "second answer"),
    ]


async def test_pending_question_survives_restart(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    agent = FakeAgent()
    channel = FakeChannel()
    async with running(settings, [channel], agent):
        await channel.inject(dm("ask: Keep? | yes | no", message_id="1"))
        await channel.wait_text("Keep?")
    channel = FakeChannel()
    async with running(settings, [channel], agent):
        await channel.inject(dm("no", message_id="2"))
        await channel.wait_text("answer: no")
    assert agent.runs[1].thread_id == agent.runs[0].thread_id


async def test_expired_question_is_marked_and_next_message_is_normal(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, conversations={"clarification_ttl_s": 0.001})
    channel, agent = FakeChannel(), FakeAgent()
    async with running(settings, [channel], agent) as daemon:
        await channel.inject(dm("ask: Quick? | a | b", message_id="1"))
        await channel.wait_text("Quick?")
        await daemon.kernel.conversations.lanes.wait_idle()
        store = daemon.kernel.store.clarifications
        [question] = await store.pending_for_user(
            "fake", "", "dm-alice", "alice", utc_now() - timedelta(days=1)
        )
        # The question is posted well within a millisecond on a fast machine: wait until the
        # clock has really passed its expiry, or the sweep below rightly finds nothing due.
        # (Housekeeping's own sweep cannot take it first: its first sweep ran at startup,
        # before the question existed, and the next one is SWEEP_INTERVAL_S away.)
        while utc_now() <= question.expires_at:  # noqa: ASYNC110 - a deadline, not an event
            await asyncio.sleep(0.001)
        expired = await daemon.kernel.housekeeping.expire_questions()
        assert expired == 1
        edit = await channel.wait_text("expired")
        assert isinstance(edit.delivery, TextEdit)
        await channel.inject(dm("a", message_id="2"))
        await channel.wait_text("echo: a")
        pending = await store.pending_for_user(
            "fake", "", "dm-alice", "alice", utc_now() - timedelta(days=1)
        )
        stored = await store.get(question.id)
    assert pending == []
    assert stored is not None
    assert stored.state is ClarificationState.EXPIRED


async def test_a_question_asked_by_another_replica_is_found_once_its_chat_is_taken(
    tmp_path: Path,
) -> None:
    """A chat this process held and cached as free of questions moved to another replica,
    which asked one; when this process takes the chat back, the answer must find it."""
    message = dm("blue", message_id="5")
    async with SqliteStore(tmp_path / "switchboard.db") as store:
        clarifications = Clarifications(store, lambda: 600.0)
        assert await clarifications.match(message, is_command=False) is None  # cached: none
        now = utc_now()
        key = ConversationKey(channel="fake", chat_id=message.chat_id)
        await store.clarifications.add(
            Clarification(
                id="q-elsewhere", key=key, chat_type=ChatType.DM, thread_id="t9",
                asked_user_id="alice", question="Which colour?", options=("red", "blue"),
                question_message_id=None, created_at=now, expires_at=now + timedelta(hours=1),
            )
        )  # fmt: skip
        assert await clarifications.match(message, is_command=False) is None  # still cached

        clarifications.forget_chats([ChatRef.of(message)])
        answer = await clarifications.match(message, is_command=False)
    assert answer is not None
    assert answer.clarification.id == "q-elsewhere"
    assert answer.text == "blue"
