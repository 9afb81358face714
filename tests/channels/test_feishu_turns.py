"""Whole turns as a Feishu user lives them, through the real daemon against FakeFeishu: long
streamed answers end complete and in order with no card left streaming, a question is answered
by typing, and an event is acked at once while the model is still thinking."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.delivery.replies import LONG_ANSWER_NOTE
from bot.ports import FinalAnswer, TextDelta
from tests.channels.feishu_support import (
    DM,
    GROUP,
    WAIT_S,
    at_bot,
    feishu_daemon,
    feishu_settings,
    shown_text,
    texts,
    wait_text,
)
from tests.fakes.agent import FakeAgent
from tests.fakes.feishu import Message
from tests.fakes.feishu_api import FakeFeishu
from tests.fakes.scripted_agent import ScriptedAgent

ACK_WITHIN_S = 3.0
"""Feishu redelivers an event whose long-connection frame is not answered in about 3 s."""
_MARK = re.compile(r"§(\d{4})")


def _long_answer(paragraphs: int) -> str:
    """Numbered paragraphs (``§0001`` …) of about 100 characters, some of them CJK."""
    body = "The quick brown fox jumps over the lazy dog; 敏捷的棕色狐狸跳过了懒狗。 " * 2
    return "\n\n".join(f"§{i:04d} {body[:90].rstrip()}." for i in range(1, paragraphs + 1))


def _marks(text: str) -> list[int]:
    return [int(m) for m in _MARK.findall(text)]


def _streaming(fake: FakeFeishu, message: Message) -> bool:
    """Whether the message still shows a CardKit card in streaming mode."""
    if message.card_id is None or message.content.get("type") != "card":
        return False
    return fake.card(message.card_id).streaming_mode


async def _stream(fake: FakeFeishu, agent: ScriptedAgent, answer: str, piece: int = 64) -> None:
    """Feed the answer in small deltas: a few, then (once the streaming card shows them) the
    rest, which streams into the card, and the final."""
    pieces = [answer[i : i + piece] for i in range(0, len(answer), piece)]
    for delta in pieces[:4]:
        agent.feed(TextDelta(text=delta))
    await fake.await_call(
        "im.message.reply", lambda c: "card_id" in c.json["content"], within=WAIT_S
    )
    for delta in pieces[4:]:
        agent.feed(TextDelta(text=delta))
    await fake.await_call("cardkit.card_element.content", within=WAIT_S)
    agent.feed(FinalAnswer(text=answer))


async def test_a_40_kb_streamed_answer_arrives_whole_as_a_summary_and_a_file(
    tmp_path: Path,
) -> None:
    answer = _long_answer(400)
    assert 40_000 <= len(answer.encode()) <= 60_000
    with FakeFeishu() as fake:
        agent = ScriptedAgent()
        settings = feishu_settings(tmp_path, fake)
        async with feishu_daemon(settings, fake, agent) as run:
            asked = fake.push_message("write me a long report", chat_id=DM)
            await _stream(fake, agent, answer)
            await fake.await_until(
                lambda: [m.msg_type for m in fake.sent_messages(DM)] == ["interactive", "file"],
                WAIT_S,
            )
            await run.settle()
        summary, attached = fake.sent_messages(DM)
        # The streaming card became the summary, closed; nothing else is left streaming.
        assert summary.card_id is not None
        assert summary.parent_id == asked
        assert not fake.card(summary.card_id).streaming_mode
        assert not any(card.streaming_mode for card in fake.cards().values())
        shown = shown_text(fake, summary)
        assert shown.startswith("§0001 ")
        assert LONG_ANSWER_NOTE in shown
        assert "▍" not in shown
        # The whole answer, once and in order, is the attached Markdown file.
        [upload] = [u for u in fake.uploads().values() if u.file_name == "answer.md"]
        assert attached.content["file_key"] == upload.key
        assert upload.data.decode() == answer
        assert _marks(upload.data.decode()) == list(range(1, 401))


async def test_a_30_kb_streamed_answer_arrives_in_order_over_five_cards(tmp_path: Path) -> None:
    answer = _long_answer(300)
    with FakeFeishu() as fake:
        agent = ScriptedAgent()
        settings = feishu_settings(tmp_path, fake)
        async with feishu_daemon(settings, fake, agent) as run:
            asked = fake.push_message("write me a long story", chat_id=DM)
            await _stream(fake, agent, answer)
            await fake.await_until(lambda: "§0300" in "".join(texts(fake, DM)), WAIT_S)
            await run.settle()
        messages = fake.sent_messages(DM)
        assert len(messages) == 5
        assert all(m.msg_type == "interactive" for m in messages)
        assert not any(_streaming(fake, m) for m in messages)
        assert not any(card.streaming_mode for card in fake.cards().values())
        # The first chunk replaced the streaming card in place; every chunk is in the chat.
        [streamed] = fake.cards()
        assert messages[0].card_id == streamed
        assert messages[0].parent_id == asked
        shown = texts(fake, DM)
        assert not any("▍" in text for text in shown)
        assert _marks("\n\n".join(shown)) == list(range(1, 301))
        assert "\n\n".join(text.strip() for text in shown) == answer


@pytest.mark.parametrize("where", ["dm", "group"])
async def test_a_question_is_answered_by_a_typed_message(tmp_path: Path, where: str) -> None:
    chat = DM if where == "dm" else GROUP
    with FakeFeishu() as fake:
        agent = FakeAgent()
        settings = feishu_settings(tmp_path, fake)
        async with feishu_daemon(settings, fake, agent) as run:
            if where == "dm":
                fake.push_message("ask: Which colour? | red | blue", chat_id=DM)
            else:
                fake.push_message(**at_bot(fake, "ask: Which colour? | red | blue"))
            await wait_text(fake, chat, "Which colour?")
            [question] = fake.sent_messages(chat)
            buttons = [e for e in question.content["body"]["elements"] if e["tag"] == "button"]
            assert [b["text"]["content"] for b in buttons] == ["red", "blue"]
            # Neither button: the user types an answer of their own (no mention in the group).
            fake.push_message("green, please", chat_id=chat, chat_type="p2p" if where == "dm"
                              else "group")  # fmt: skip
            await wait_text(fake, chat, "answer: green, please")
            await run.settle()
        assert [r.turn.resume_answer for r in agent.runs] == [None, "green, please"]
        assert agent.runs[1].thread_id == agent.runs[0].thread_id
        shown = texts(fake, chat)
        assert len(shown) == 2
        assert shown[0].startswith("❓ Which colour?")
        assert shown[1] == "answer: green, please"


async def test_events_are_acked_at_once_while_the_model_is_slow(tmp_path: Path) -> None:
    with FakeFeishu() as fake:
        agent = FakeAgent()
        release = agent.hold("slow")
        settings = feishu_settings(tmp_path, fake)
        async with feishu_daemon(settings, fake, agent) as run:
            first = fake.push_message("a slow question", chat_id=DM)
            [first_event] = fake.event_ids(first)
            ack = await fake.await_ack(first_event, timeout=WAIT_S)
            await agent.wait_runs(1, within=WAIT_S)
            # A second message while the first turn is still thinking is acked at once too.
            second = fake.push_message("and another slow one", chat_id=DM)
            [second_event] = fake.event_ids(second)
            queued_ack = await fake.await_ack(second_event, timeout=WAIT_S)
            answers = [t for t in texts(fake, DM) if t.startswith("echo:")]
            release.set()
            await wait_text(fake, DM, "echo: and another slow one")
            await run.settle()
        assert answers == []  # both acks arrived while the answers were still pending
        delivered = {d.event_id: d.at for d in fake.deliveries()}
        for got in (ack, queued_ack):
            assert got.code == 200
            assert got.at - delivered[got.event_id] < ACK_WITHIN_S
        assert fake.unacked() == []
        assert sum("echo: a slow question" in t for t in texts(fake, DM)) == 1
