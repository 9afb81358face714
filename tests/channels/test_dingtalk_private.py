"""Private messages on DingTalk: a robot in a group has no way to show one member a message
the others do not see, so a message ``private_to`` someone is posted in the chat as usual."""

from __future__ import annotations

from pathlib import Path

from bot.messages import ChatType, Destination, OutboundKind, OutboundText
from tests.channels.dingtalk_support import ALICE, BOB, GROUP, dingtalk_daemon, dingtalk_settings
from tests.fakes.agent import FakeAgent
from tests.fakes.dingtalk_api import FakeDingTalk


async def test_a_private_message_is_posted_in_the_group(tmp_path: Path) -> None:
    with FakeDingTalk() as fake:
        fake.add_group(GROUP, members=(ALICE, BOB))
        async with dingtalk_daemon(dingtalk_settings(tmp_path, fake), fake, FakeAgent()) as run:
            sent = await run.channel.send_text(
                OutboundText(
                    destination=Destination(
                        channel="dingtalk", chat_id=GROUP, chat_type=ChatType.GROUP
                    ),
                    text="Only Alice may decide this.",
                    kind=OutboundKind.NOTICE,
                    private_to=BOB,
                )
            )
        (posted,) = fake.sent_messages(GROUP)
        assert (posted.via, posted.text) == ("group", "Only Alice may decide this.")
        assert sent.message_ids  # an ordinary message
