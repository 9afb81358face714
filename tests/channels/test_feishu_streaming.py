"""Streaming answers as CardKit cards: created on the first text, updated with increasing
sequences, closed by the final (also after /stop), and finalised after a restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.errors import MessageGone, SendErrorKind
from bot.messages import ChatType, Destination, OutboundKind, OutboundText, TextEdit
from bot.ports import FinalAnswer, TextDelta
from tests.channels.feishu_support import (
    DM,
    feishu_daemon,
    feishu_settings,
    shown_text,
)
from tests.fakes.agent import FakeAgent
from tests.fakes.feishu_api import FakeFeishu
from tests.fakes.scripted_agent import ScriptedAgent


def _sequences(fake: FakeFeishu, card_id: str) -> list[int]:
    return [sequence for _, sequence in fake.card(card_id).operations]


async def test_a_streamed_answer_lives_in_one_card_that_is_closed(tmp_path: Path) -> None:
    with FakeFeishu() as fake:
        agent = ScriptedAgent()
        settings = feishu_settings(tmp_path, fake)
        async with feishu_daemon(settings, fake, agent) as run:
            asked = fake.push_message("tell me a story", chat_id=DM)
            agent.feed(TextDelta(text="Once"))
            await fake.await_call("cardkit.card.create")
            sent = await fake.await_call("im.message.reply")
            assert '"type":"card"' in sent.json["content"]
            agent.feed(TextDelta(text=" upon a time"))
            await fake.await_call(
                "cardkit.card_element.content", lambda c: "upon a time" in c.json["content"]
            )
            agent.feed(FinalAnswer(text="Once upon a **time**."))
            await fake.await_call("cardkit.card.settings")
            await run.settle()
        [message] = fake.sent_messages(DM)
        assert message.parent_id == asked
        assert message.card_id is not None
        card = fake.card(message.card_id)
        assert not card.streaming_mode
        assert shown_text(fake, message) == "Once upon a **time**."
        sequences = _sequences(fake, message.card_id)
        assert sequences == sorted(set(sequences))
        assert card.operations[-1][0] == "settings"


async def test_stop_closes_the_streaming_card(tmp_path: Path) -> None:
    with FakeFeishu() as fake:
        agent = FakeAgent()
        release = agent.hold("slow")
        settings = feishu_settings(tmp_path, fake)
        async with feishu_daemon(settings, fake, agent) as run:
            fake.push_message("slow question", chat_id=DM)
            await fake.await_call("im.message.reply", lambda c: "card_id" in c.json["content"])
            fake.push_message("/stop", chat_id=DM)
            await fake.await_call("cardkit.card.settings")
            release.set()
            await run.settle()
        card_messages = [m for m in fake.sent_messages(DM) if m.card_id is not None]
        [message] = card_messages
        assert message.card_id is not None
        assert not fake.card(message.card_id).streaming_mode
        assert "Stopped" in shown_text(fake, message)


async def test_a_card_from_before_a_restart_is_finalised_by_its_message_id(
    tmp_path: Path,
) -> None:
    with FakeFeishu() as fake:
        fake.add_chat(DM, chat_type="p2p", user="ou_u1")
        destination = Destination(channel="feishu", chat_id=DM, chat_type=ChatType.DM)
        settings = feishu_settings(tmp_path, fake)
        async with feishu_daemon(settings, fake, FakeAgent()) as first:
            progress = OutboundText(
                destination=destination, text="thinking", kind=OutboundKind.PROGRESS
            )
            ref = await first.channel.send_text(progress)
        async with feishu_daemon(settings, fake, FakeAgent()) as second:
            final = TextEdit(
                destination=destination, message_id=ref.last, text="done **now**",
                kind=OutboundKind.FINAL,
            )  # fmt: skip
            await second.channel.edit_text(final)
        message = fake.message(ref.last)
        assert message is not None
        assert message.updated
        assert shown_text(fake, message) == "done **now**"


async def test_an_expired_stream_is_finalised_with_a_static_card(tmp_path: Path) -> None:
    with FakeFeishu() as fake:
        agent = ScriptedAgent()
        settings = feishu_settings(tmp_path, fake)
        async with feishu_daemon(settings, fake, agent) as run:
            fake.push_message("long one", chat_id=DM)
            agent.feed(TextDelta(text="partial"))
            await fake.await_call("im.message.reply")
            [card_id] = fake.cards()
            fake.expire_streaming(card_id)
            agent.feed(FinalAnswer(text="complete answer"))
            await fake.await_call("im.message.patch")
            await run.settle()
        [message] = fake.sent_messages(DM)
        assert message.updated
        assert "complete answer" in str(message.content)


async def test_editing_a_recalled_message_is_message_gone(tmp_path: Path) -> None:
    with FakeFeishu() as fake:
        fake.add_chat(DM, chat_type="p2p", user="ou_u1")
        destination = Destination(channel="feishu", chat_id=DM, chat_type=ChatType.DM)
        settings = feishu_settings(tmp_path, fake)
        async with feishu_daemon(settings, fake, FakeAgent()) as run:
            sent = await run.channel.send_text(
                OutboundText(destination=destination, text="soon gone", kind=OutboundKind.NOTICE)
            )
            fake.fail_next("im.message.patch", code=230011, msg="The message is recalled.")
            edit = TextEdit(
                destination=destination, message_id=sent.last, text="x", kind=OutboundKind.FINAL
            )
            with pytest.raises(MessageGone) as raised:
                await run.channel.edit_text(edit)
        assert raised.value.kind is SendErrorKind.INVALID_REQUEST
