"""The real Telegram adapter against FakeTelegram with a recording intake instead of the kernel,
so a test decides what the "kernel" says about a button press, and when."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from bot.messages import (
    Button,
    ChatType,
    Destination,
    InboundMessage,
    OutboundKind,
    OutboundText,
)
from bot.ops.routes import RouteTable
from bot.ports import Admission, ChannelContext
from channels.telegram import TelegramChannel
from tests.channels.health_log import HealthLog
from tests.channels.telegram_support import FAST_CAPS, WAIT_S, telegram_settings
from tests.fakes.telegram_api import FakeTelegram

GROUP = -1001234
CHOICES = (
    Button(label="Approve", payload="a/1/approve"),
    Button(label="Reject", payload="a/1/reject"),
)


class Intake:
    """A ``Publish`` that records what the adapter journaled; it refuses while ``refusing``."""

    def __init__(self) -> None:
        self.taken: list[InboundMessage] = []
        self.refused = 0
        self.refusing = False
        self._changed = asyncio.Event()

    async def __call__(self, message: InboundMessage) -> Admission:
        (admission,) = await self.many([message])
        return admission

    async def many(self, messages: Sequence[InboundMessage]) -> list[Admission]:
        self._changed.set()
        if self.refusing:
            self.refused += 1
            return [Admission.QUEUE_FULL] * len(messages)
        self.taken += messages
        return [Admission.ACCEPTED] * len(messages)

    async def wait(self, done: Any, within: float = WAIT_S) -> None:
        """Until ``done()`` holds (checked after each batch)."""
        async with asyncio.timeout(within):
            while not done():
                self._changed.clear()
                await self._changed.wait()

    async def wait_presses(self, count: int) -> list[InboundMessage]:
        def presses() -> list[InboundMessage]:
            return [m for m in self.taken if m.button is not None]

        await self.wait(lambda: len(presses()) >= count)
        return presses()


@asynccontextmanager
async def started(
    tmp_path: Path, fake: FakeTelegram, intake: Intake, *, press_window_s: float
) -> AsyncIterator[TelegramChannel]:
    health = HealthLog()
    context = ChannelContext(routes=RouteTable(), state_dir=tmp_path, health=health)
    channel = TelegramChannel(
        telegram_settings(tmp_path, fake),
        context,
        capabilities=FAST_CAPS,
        poll_timeout_s=1,
        press_window_s=press_window_s,
    )
    await channel.start(intake)
    try:
        yield channel
    finally:
        await channel.aclose()


def group(chat_id: int = GROUP) -> Destination:
    return Destination(channel="telegram", chat_id=str(chat_id), chat_type=ChatType.GROUP)


def notice(text: str, *, to: str | None, chat_id: int = GROUP) -> OutboundText:
    return OutboundText(
        destination=group(chat_id), text=text, kind=OutboundKind.NOTICE, private_to=to
    )


async def ask(channel: TelegramChannel, fake: FakeTelegram, intake: Intake) -> int:
    """The bot's message with buttons in the group (a member spoke there first); its id."""
    fake.push_message("hello", chat_id=GROUP, chat_type="supergroup", user_id=7)
    await intake.wait(lambda: any(m.chat_id == str(GROUP) for m in intake.taken))
    question = OutboundText(
        destination=group(), text="Run `deploy`?", kind=OutboundKind.NOTICE, buttons=CHOICES
    )
    sent = await channel.send_text(question)
    return int(sent.last)


def press(fake: FakeTelegram, message_id: int, *, user_id: int) -> str:
    """A member presses Approve; the callback query's id."""
    update = fake.push_callback_query(
        data=CHOICES[0].payload, chat_id=GROUP, message_id=message_id, user_id=user_id
    )
    return str(update["callback_query"]["id"])
