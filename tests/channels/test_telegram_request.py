"""The bound on Bot API calls in flight, against the fake Bot API."""

from __future__ import annotations

import asyncio

from telegram import Bot

from channels.telegram.request import BoundedRequest
from tests.fakes.telegram_api import FakeTelegram

DELAY_S = 0.2


async def test_no_more_calls_than_the_bound_are_in_flight() -> None:
    with FakeTelegram() as fake:
        fake.push_message("hi", chat_id=42)
        fake.delay_next("sendMessage", DELAY_S, times=4)
        bot = Bot(
            fake.token,
            base_url=fake.base_url,
            base_file_url=fake.base_file_url,
            request=BoundedRequest(2, read_timeout=5.0, write_timeout=5.0),
        )
        async with bot:
            sent = await asyncio.gather(
                *(bot.send_message(chat_id=42, text=f"n{n}") for n in range(4))
            )
        assert len({message.message_id for message in sent}) == 4
        first, _, third, _ = fake.calls("sendMessage")
        # The third call could only leave once one of the first two was answered.
        assert third.at - first.at >= DELAY_S * 0.9
