"""Feishu sends are idempotent (design §17.3): every send carries a ``uuid`` derived from the
kernel's ``dedupe_key``, and a repeat answers with the message the first one posted. Recovery
relies on it to find a placeholder a crash left unrecorded (design §11)."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

from bot.messages import ChatType, Destination, OutboundFile, OutboundKind, OutboundText, TextEdit
from bot.pipeline.recovery import INTERRUPTED_PLACEHOLDER
from bot.ports import FinalAnswer, TextDelta
from bot.records import OutboxState
from channels.feishu import FEISHU_CAPABILITIES
from tests.channels.feishu_support import DM, feishu_daemon, feishu_settings, shown_text
from tests.fakes.agent import FakeAgent
from tests.fakes.feishu_api import FakeFeishu
from tests.fakes.scripted_agent import ScriptedAgent

DESTINATION = Destination(channel="feishu", chat_id=DM, chat_type=ChatType.DM)
KEY = "c0ffee00-1234-4bcd-8def-0123456789ab/final/0"  # longer than Feishu's 50-character uuid


def uuid_of(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def test_feishu_declares_idempotent_sends() -> None:
    assert FEISHU_CAPABILITIES.idempotent_sends


async def test_a_send_carries_a_uuid_from_its_key_and_a_repeat_posts_nothing(
    tmp_path: Path,
) -> None:
    with FakeFeishu() as fake:
        fake.add_chat(DM, chat_type="p2p", user="ou_u1")
        message = OutboundText(
            destination=DESTINATION, text="once **only**", kind=OutboundKind.FINAL, dedupe_key=KEY
        )
        async with feishu_daemon(feishu_settings(tmp_path, fake), fake, FakeAgent()) as run:
            first = await run.channel.send_text(message)
            again = await run.channel.send_text(message)
            unkeyed = await run.channel.send_text(replace(message, dedupe_key=""))
        calls = fake.calls("im.message.create")
        posted = [m.message_id for m in fake.sent_messages(DM)]
    assert first == again
    assert posted == [first.last, unkeyed.last]
    assert [call.json.get("uuid") for call in calls] == [uuid_of(KEY), uuid_of(KEY), None]


async def test_a_file_and_its_caption_have_a_uuid_each(tmp_path: Path) -> None:
    report = tmp_path / "report.pdf"
    report.write_bytes(b"%PDF-1.4 report")
    with FakeFeishu() as fake:
        fake.add_chat(DM, chat_type="p2p", user="ou_u1")
        upload = OutboundFile(
            destination=DESTINATION, path=str(report), name="report.pdf",
            size=report.stat().st_size, is_image=False, caption="Your report", dedupe_key=KEY,
        )  # fmt: skip
        async with feishu_daemon(feishu_settings(tmp_path, fake), fake, FakeAgent()) as run:
            first = await run.channel.send_file(upload)
            again = await run.channel.send_file(upload)
        uuids = [c.json.get("uuid") for c in fake.calls() if c.name.startswith("im.message.")]
        posted = fake.sent_messages(DM)
    assert first == again
    assert [m.message_id for m in posted] == list(first.message_ids)
    assert [m.msg_type for m in posted] == ["file", "text"]
    file_uuid, caption_uuid = uuids[:2]
    assert uuids == [file_uuid, caption_uuid] * 2
    assert file_uuid == uuid_of(KEY)
    assert caption_uuid not in (None, file_uuid)


async def test_a_placeholder_resent_under_its_key_names_the_card_it_made(tmp_path: Path) -> None:
    """What recovery does after a kill -9 between Feishu's answer and the sent mark: a later
    process resends the placeholder's key as the interrupted notice, gets the card's message
    back (no second message, no second card), and edits it."""
    key = "corr1/placeholder/0"
    with FakeFeishu() as fake:
        fake.add_chat(DM, chat_type="p2p", user="ou_u1")
        settings = feishu_settings(tmp_path, fake)
        progress = OutboundText(
            destination=DESTINATION, text="Let me look ▍", kind=OutboundKind.PROGRESS,
            dedupe_key=key,
        )  # fmt: skip
        async with feishu_daemon(settings, fake, FakeAgent()) as first:
            placeholder = await first.channel.send_text(progress)
        notice = OutboundText(
            destination=DESTINATION, text=INTERRUPTED_PLACEHOLDER, kind=OutboundKind.NOTICE,
            dedupe_key=key,
        )  # fmt: skip
        async with feishu_daemon(settings, fake, FakeAgent()) as second:
            found = await second.channel.send_text(notice)
            edit = TextEdit(
                destination=DESTINATION, message_id=found.last, text=INTERRUPTED_PLACEHOLDER,
                kind=OutboundKind.NOTICE,
            )  # fmt: skip
            await second.channel.edit_text(edit)
        [message] = fake.sent_messages(DM)
        cards = fake.cards()
    assert found == placeholder
    assert message.message_id == placeholder.last
    assert len(cards) == 1  # the resend made no card entity of its own
    assert message.content.get("type") != "card"  # a static card now: nothing streams
    assert shown_text(fake, message) == INTERRUPTED_PLACEHOLDER


async def test_a_turns_sends_carry_their_rows_keys(tmp_path: Path) -> None:
    """Through the daemon: the placeholder card and the answer each carry the uuid of their
    outbox row's key."""
    with FakeFeishu() as fake:
        agent = ScriptedAgent()
        async with feishu_daemon(feishu_settings(tmp_path, fake), fake, agent) as run:
            fake.push_message("tell me", chat_id=DM)
            agent.feed(TextDelta(text="Thinking"))
            await fake.await_call("im.message.reply", lambda c: "card_id" in c.json["content"])
            agent.feed(FinalAnswer(text="Done."))
            await run.settle()
            rows = await run.kernel.store.outbox.listing(OutboxState.SENT)
        replies = fake.calls("im.message.reply")
    keys = {row.item.idempotency_key for row in rows}
    placeholder = next(key for key in keys if "/placeholder/" in key)
    assert [call.json.get("uuid") for call in replies] == [uuid_of(placeholder)]
