"""The bound on Bot API calls in flight, against the fake Bot API."""

from __future__ import annotations

import asyncio
import gc
import ssl

from telegram import Bot

from channels.telegram.request import BotAccess, BoundedRequest
from tests.fakes.telegram_api import FakeTelegram

DELAY_S = 0.2
TOKEN = "123:not-a-real-token"  # noqa: S105 - never sent: the bots are only built


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


def _tls_contexts(root: object) -> set[int]:
    """The TLS contexts reachable from ``root`` through PTB's and httpx's objects."""
    found: set[int] = set()
    seen: set[int] = set()
    todo = [root]
    while todo:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, ssl.SSLContext):
            found.add(id(item))
            continue
        module = type(item).__module__.split(".")[0]
        if module in {"telegram", "httpx", "httpcore", "channels"} or isinstance(
            item, (dict, list, tuple)
        ):
            todo.extend(gc.get_referents(item))
    return found


def test_every_bot_request_shares_one_tls_context() -> None:
    """Each TLS context parses its own copy of the CA store (about 1.2 MB): the calls' and
    getUpdates' requests of every bot the process builds (a restart builds another) share one."""
    access = BotAccess(token=TOKEN, api="https://api.telegram.org", in_flight=4)
    first, second = access.new_bot(), access.new_bot()
    assert len(_tls_contexts(first) | _tls_contexts(second)) == 1
