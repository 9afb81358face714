"""Private messages and decided questions on Slack: a message ``private_to`` a member of a
channel is an ephemeral message only they see; in a DM, or for someone not in the channel, it is
posted; an edit without buttons leaves no ``actions`` block behind."""

from __future__ import annotations

from pathlib import Path

from bot.messages import (
    Button,
    ChatType,
    Destination,
    OutboundKind,
    OutboundText,
    RenderMode,
    TextEdit,
)
from tests.channels.slack_support import markdown_of, slack_daemon, slack_settings
from tests.fakes.agent import FakeAgent
from tests.fakes.slack_api import FakeSlack

CHANNEL = "C0PRIV01"
DM = "D0PRIV01"
MEMBER = "UMEMBER1"


def _to(chat_id: str, chat_type: ChatType, topic_id: str | None = None) -> Destination:
    return Destination(
        channel="slack", account_id="T0001", chat_id=chat_id, chat_type=chat_type, topic_id=topic_id
    )


def _private(
    destination: Destination, text: str, *, to: str, render: RenderMode = RenderMode.RICH
) -> OutboundText:
    return OutboundText(
        destination=destination, text=text, kind=OutboundKind.NOTICE, private_to=to, render=render
    )


async def test_a_private_message_in_a_channel_is_ephemeral(tmp_path: Path) -> None:
    with FakeSlack() as fake:
        fake.add_channel(CHANNEL)
        fake.add_user(MEMBER, name="member")
        async with slack_daemon(slack_settings(tmp_path, fake), fake, FakeAgent()) as run:
            in_thread = _to(CHANNEL, ChatType.GROUP, topic_id="1700000000.000100")
            sent = await run.channel.send_text(
                _private(in_thread, "Only **Alice** may decide this.", to=MEMBER)
            )
            plain = await run.channel.send_text(
                _private(_to(CHANNEL, ChatType.GROUP), "Already decided.", to=MEMBER,
                         render=RenderMode.PLAIN)
            )  # fmt: skip
        first, second = fake.ephemeral_messages(CHANNEL)
        assert sent.message_ids == plain.message_ids == ()  # Slack cannot edit them
        assert (first.user, first.thread_ts) == (MEMBER, "1700000000.000100")
        assert first.blocks == [{"type": "markdown", "text": "Only **Alice** may decide this."}]
        assert (second.user, second.thread_ts, second.text) == (MEMBER, None, "Already decided.")
        assert fake.channel_messages(CHANNEL) == []


async def test_a_private_message_in_a_dm_or_to_a_stranger_is_posted(tmp_path: Path) -> None:
    with FakeSlack() as fake:
        fake.add_channel(CHANNEL)
        fake.add_channel(DM)
        async with slack_daemon(slack_settings(tmp_path, fake), fake, FakeAgent()) as run:
            in_dm = await run.channel.send_text(
                _private(_to(DM, ChatType.DM), "Just you.", to="U1")
            )
            stranger = await run.channel.send_text(
                _private(_to(CHANNEL, ChatType.GROUP), "Not a member.", to="UNOBODY")
            )
        assert fake.ephemeral_messages() == []
        assert [markdown_of(m) for m in fake.channel_messages(DM)] == ["Just you."]
        assert [markdown_of(m) for m in fake.channel_messages(CHANNEL)] == ["Not a member."]
        assert in_dm.message_ids == (fake.channel_messages(DM)[0]["ts"],)
        assert stranger.message_ids == (fake.channel_messages(CHANNEL)[0]["ts"],)
        assert [c.error for c in fake.calls("chat.postEphemeral")] == ["user_not_in_channel"]


async def test_an_edit_without_buttons_takes_the_buttons_away(tmp_path: Path) -> None:
    buttons = (Button(label="Approve", payload="a/1/approve"), Button(label="Reject", payload="r"))
    with FakeSlack() as fake:
        fake.add_channel(CHANNEL)
        async with slack_daemon(slack_settings(tmp_path, fake), fake, FakeAgent()) as run:
            asked = await run.channel.send_text(
                OutboundText(
                    destination=_to(CHANNEL, ChatType.GROUP),
                    text="Run `deploy`?",
                    kind=OutboundKind.NOTICE,
                    buttons=buttons,
                )
            )
            before = fake.message(CHANNEL, asked.last)
            for render in (RenderMode.RICH, RenderMode.PLAIN):
                await run.channel.edit_text(
                    TextEdit(
                        destination=_to(CHANNEL, ChatType.GROUP),
                        message_id=asked.last,
                        text=f"Run `deploy`? Approved by Alice ({render}).",
                        kind=OutboundKind.NOTICE,
                        render=render,
                    )
                )
                after = fake.message(CHANNEL, asked.last)
                assert after is not None
                assert "actions" not in [b["type"] for b in after.get("blocks") or ()]
                assert f"({render})" in str(after["text"])
        assert before is not None
        assert [b["type"] for b in before["blocks"]] == ["markdown", "actions"]


async def test_a_pressed_approval_keeps_its_buttons_until_the_kernel_redraws_it(
    tmp_path: Path,
) -> None:
    """Only a question's buttons become "✅ Chosen: X" on the click; the press on any other
    button may be refused (someone not allowed), so the buttons stay for those who may."""
    group = _to(CHANNEL, ChatType.GROUP)
    approval = (Button(label="Approve", payload="a/req1/approve"),)
    question = (Button(label="Blue", payload="c/q1/0"),)
    with FakeSlack() as fake:
        fake.add_channel(CHANNEL)
        async with slack_daemon(slack_settings(tmp_path, fake), fake, FakeAgent()) as run:
            refs = [
                await run.channel.send_text(
                    OutboundText(destination=group, text=text, kind=OutboundKind.NOTICE, buttons=b)
                )
                for text, b in (("Run `deploy`?", approval), ("Which colour?", question))
            ]
            for ref, buttons in zip(refs, (approval, question), strict=True):
                fake.click_button(
                    channel=CHANNEL, message_ts=ref.last, action_id="switchboard:choice:0",
                    value=buttons[0].payload, user=MEMBER,
                )  # fmt: skip
            await fake.await_call("chat.update", lambda c: c.params["ts"] == refs[1].last)
            await run.settle()
        asked = fake.message(CHANNEL, refs[0].last)
        chosen = fake.message(CHANNEL, refs[1].last)
        assert asked is not None
        assert chosen is not None
        assert [b["type"] for b in asked["blocks"]] == ["markdown", "actions"]
        assert "Chosen: *Blue*" in str(chosen["blocks"])
        assert [c.params["ts"] for c in fake.calls("chat.update")] == [refs[1].last]
