"""Private messages and decided questions on Feishu: a message ``private_to`` a group member is
a card only they see; in a p2p chat or a topic group it is posted; an edit without buttons
redraws the card without them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.messages import (
    Button,
    ChatType,
    Destination,
    OutboundKind,
    OutboundText,
    RenderMode,
    TextEdit,
)
from tests.channels.feishu_support import DM, GROUP, USER, feishu_daemon, feishu_settings
from tests.fakes.agent import FakeAgent
from tests.fakes.feishu_api import FakeFeishu

TOPIC_GROUP = "oc_topics1"
BUTTONS = (Button(label="Approve", payload="a/1/approve"), Button(label="Reject", payload="r"))


def _to(chat_id: str, chat_type: ChatType) -> Destination:
    return Destination(channel="feishu", chat_id=chat_id, chat_type=chat_type)


def _private(
    destination: Destination, text: str, *, render: RenderMode = RenderMode.RICH
) -> OutboundText:
    return OutboundText(
        destination=destination,
        text=text,
        kind=OutboundKind.NOTICE,
        private_to=USER,
        render=render,
    )


def _tags(card: dict[str, Any]) -> list[str]:
    return [str(element.get("tag")) for element in card["body"]["elements"]]


async def test_a_private_message_in_a_group_is_a_card_only_the_member_sees(
    tmp_path: Path,
) -> None:
    with FakeFeishu() as fake:
        fake.add_chat(GROUP)
        async with feishu_daemon(feishu_settings(tmp_path, fake), fake, FakeAgent()) as run:
            group = _to(GROUP, ChatType.GROUP)
            rich = await run.channel.send_text(_private(group, "Only **Alice** may decide."))
            plain = await run.channel.send_text(
                _private(group, "Already decided.", render=RenderMode.PLAIN)
            )
        first, second = fake.ephemerals(GROUP)
        assert rich.message_ids == plain.message_ids == ()  # nothing the bot could patch
        assert (first.open_id, second.open_id) == (USER, USER)
        assert first.card["body"]["elements"][0]["content"] == "Only **Alice** may decide."
        assert second.card["body"]["elements"][0]["text"]["content"] == "Already decided."
        assert fake.sent_messages(GROUP) == []


async def test_a_private_message_in_a_p2p_chat_or_a_topic_group_is_posted(
    tmp_path: Path,
) -> None:
    with FakeFeishu() as fake:
        fake.add_chat(DM, chat_type="p2p", user=USER)
        fake.add_chat(TOPIC_GROUP, chat_type="topic")
        async with feishu_daemon(feishu_settings(tmp_path, fake), fake, FakeAgent()) as run:
            in_dm = await run.channel.send_text(_private(_to(DM, ChatType.DM), "Just you."))
            in_topics = await run.channel.send_text(
                _private(_to(TOPIC_GROUP, ChatType.GROUP), "Everyone sees this.")
            )
        assert fake.ephemerals() == []
        assert [c.code for c in fake.calls("ephemeral.send")] == [232017]  # the topic group
        (dm_message,) = fake.sent_messages(DM)
        (topic_message,) = fake.sent_messages(TOPIC_GROUP)
        assert in_dm.message_ids == (dm_message.message_id,)
        assert in_topics.message_ids == (topic_message.message_id,)


async def test_an_edit_without_buttons_redraws_the_card_without_them(tmp_path: Path) -> None:
    with FakeFeishu() as fake:
        fake.add_chat(GROUP)
        async with feishu_daemon(feishu_settings(tmp_path, fake), fake, FakeAgent()) as run:
            group = _to(GROUP, ChatType.GROUP)
            question = OutboundText(
                destination=group, text="Run `deploy`?", kind=OutboundKind.NOTICE, buttons=BUTTONS
            )
            asked = await run.channel.send_text(question)
            await run.channel.edit_text(
                TextEdit(
                    destination=group,
                    message_id=asked.last,
                    text="Run `deploy`? Approved by Alice.",
                    kind=OutboundKind.NOTICE,
                )
            )
        shown = fake.message(asked.last)
        assert shown is not None
        before, after = shown.versions
        assert _tags(before) == ["markdown", "button", "button"]
        assert _tags(after) == ["markdown"]
        assert after["body"]["elements"][0]["content"] == "Run `deploy`? Approved by Alice."


async def test_a_pressed_approval_keeps_its_buttons_until_the_kernel_redraws_it(
    tmp_path: Path,
) -> None:
    """Only a question's buttons are disabled and marked on the press; the press on any other
    button may be refused (someone not allowed), so the buttons stay for those who may."""
    group = _to(GROUP, ChatType.GROUP)
    approval = (Button(label="Approve", payload="a/req1/approve"),)
    question = (Button(label="Blue", payload="c/q1/0"),)
    with FakeFeishu() as fake:
        fake.add_chat(GROUP)
        async with feishu_daemon(feishu_settings(tmp_path, fake), fake, FakeAgent()) as run:
            refs = [
                await run.channel.send_text(
                    OutboundText(destination=group, text=text, kind=OutboundKind.NOTICE, buttons=b)
                )
                for text, b in (("Run `deploy`?", approval), ("Which colour?", question))
            ]
            for ref in refs:
                shown = fake.message(ref.last)
                assert shown is not None
                (button,) = [e for e in shown.content["body"]["elements"] if e["tag"] == "button"]
                value = button["behaviors"][0]["value"]
                await run.press(message_id=ref.last, chat_id=GROUP, value=value, open_id=USER)
            await fake.await_call(
                "im.message.patch", lambda c: c.path_params.get("message_id") == refs[1].last
            )
            await run.settle()
        asked, chosen = (fake.message(ref.last) for ref in refs)
        assert asked is not None
        assert chosen is not None
        assert len(asked.versions) == 1  # never redrawn
        assert "Chosen: **Blue**" in str(chosen.content)
        assert [c.path_params["message_id"] for c in fake.calls("im.message.patch")] == [
            refs[1].last
        ]
