"""Three ``switchboard run`` replicas on one PostgreSQL (design §11 "replicas"), against the
fake Telegram playing the load balancer and a model that names what it answers: every message
answered exactly once and in order through a kill -9, a question asked through one replica and
answered through another, and Telegram polling taken over by a standby."""

from __future__ import annotations

import asyncio
import functools
import json
import signal
from pathlib import Path

from bench.replicas_fleet import Replica
from bench.replicas_load import answered
from tests.channels.replicas_support import (
    ASK,
    EXPIRY_S,
    ReplicaModel,
    chats_by_pid,
    converse,
    every,
    fleet,
    killed,
    wait_ready,
    write_config,
)
from tests.fakes.common.waiting import eventually
from tests.fakes.telegram_api import FakeTelegram
from tests.postgres import fresh_schema, require_postgres

CHATS = 10
MESSAGES = 10
ASKING_CHAT = 100


async def _answered_total(fake: FakeTelegram) -> int:
    return sum(len(answered(fake, chat)) for chat in range(1, CHATS + 1))


async def _until_answered(fake: FakeTelegram, count: int) -> None:
    async def enough() -> bool:
        return await _answered_total(fake) >= count

    await eventually(enough, within=None, every=0.05)  # under the caller's timeout


async def _busiest(replicas: list[Replica], url: str, schema: str) -> Replica:
    """The running replica that holds the most chats."""
    held = await chats_by_pid(url, schema)
    return max(every(replicas), key=lambda r: held.get(r.process.pid, 0) if r.process else 0)


async def _poller(replicas: list[Replica]) -> Replica:
    """The replica that holds Telegram's getUpdates (it says so in its log)."""
    found: list[Replica] = []

    def holding() -> bool:
        found[:] = [r for r in replicas if "holding telegram:" in r.log.read_text()]
        return bool(found)

    await eventually(holding, within=30, every=0.05)
    (poller,) = found
    return poller


def _buttons(reply_markup: str) -> dict[str, str]:
    rows = json.loads(reply_markup)["inline_keyboard"]
    return {button["text"]: button["callback_data"] for row in rows for button in row}


async def test_three_replicas_answer_every_message_exactly_once_through_a_kill_9(
    tmp_path: Path,
) -> None:
    url = require_postgres()
    async with fresh_schema(url) as schema:
        with ReplicaModel(base_delay_s=0.2, spread_s=0.4) as model, FakeTelegram() as fake:
            config = functools.partial(
                write_config, tmp_path, fake=fake, model=model, store_url=url, schema=schema
            )
            replicas = [config(f"r{i}", webhook=True) for i in range(3)]
            fake.balance_webhook([r.webhook_url for r in replicas])
            async with fleet(replicas) as codes:
                # A question asked through one replica, answered through the next one.
                fake.push_message(f"q{ASKING_CHAT}-1 {ASK}", chat_id=ASKING_CHAT, user_id=7)
                asked = await fake.await_call(
                    "sendMessage", lambda c: "reply_markup" in c.params, timeout=60
                )
                buttons = _buttons(asked.params["reply_markup"])
                message_id = fake.chat_messages(ASKING_CHAT)[-1]["message_id"]
                fake.push_callback_query(
                    data=buttons["blue"], chat_id=ASKING_CHAT, message_id=message_id, user_id=7
                )
                await eventually(
                    lambda: any(
                        "blue" in str(m.get("text")) and "noted" in str(m.get("text"))
                        for m in fake.chat_messages(ASKING_CHAT)
                    ),
                    within=60,
                    every=0.05,
                )
                (question_url, answer_url) = [url for _, url in fake.balanced_deliveries()[:2]]
                assert question_url != answer_url

                chats = [
                    asyncio.create_task(converse(fake, chat, chat, MESSAGES), name=f"chat{chat}")
                    for chat in range(1, CHATS + 1)
                ]
                async with asyncio.timeout(180):
                    await _until_answered(fake, 30)
                    victim = await _busiest(replicas, url, schema)
                    assert await killed(victim) == -signal.SIGKILL
                    await _until_answered(fake, 70)
                    victim.start()
                    await asyncio.gather(*chats)
                    await wait_ready(victim)  # SIGTERM before its handlers exist kills it
            logs = "\n".join(f"--- {r.name}\n{r.tail(60)}" for r in replicas)
            for chat in range(1, CHATS + 1):
                assert answered(fake, chat) == [f"q{chat}-{n}" for n in range(1, MESSAGES + 1)], (
                    chat,
                    logs,
                )
            noted = [m for m in fake.chat_messages(ASKING_CHAT) if "noted" in str(m.get("text"))]
            assert len(noted) == 1, noted
            assert all(code == 0 for code in codes.values()), (codes, logs)
            assert EXPIRY_S > 0


async def test_a_standby_takes_over_telegram_polling_when_the_poller_is_killed(
    tmp_path: Path,
) -> None:
    url = require_postgres()
    async with fresh_schema(url) as schema:
        with ReplicaModel(base_delay_s=0.2, spread_s=0.3) as model, FakeTelegram() as fake:
            config = functools.partial(
                write_config, tmp_path, fake=fake, model=model, store_url=url, schema=schema
            )
            replicas = [config(f"p{i}", webhook=False) for i in range(2)]
            chats = 4
            async with fleet(replicas) as codes:
                poller = await _poller(replicas)
                conversations = [
                    asyncio.create_task(converse(fake, chat, chat, 6), name=f"chat{chat}")
                    for chat in range(1, chats + 1)
                ]
                async with asyncio.timeout(120):
                    await eventually(
                        lambda: sum(len(answered(fake, c)) for c in range(1, chats + 1)) >= 8,
                        within=None,
                        every=0.05,
                    )
                    assert await killed(poller) == -signal.SIGKILL
                    await asyncio.gather(*conversations)
            standby = next(r for r in replicas if r is not poller)
            logs = "\n".join(f"--- {r.name}\n{r.tail(60)}" for r in replicas)
            assert "holding telegram:" in standby.log.read_text(), logs
            for chat in range(1, chats + 1):
                assert answered(fake, chat) == [f"q{chat}-{n}" for n in range(1, 7)], (chat, logs)
            assert list(codes.values()) == [0], (codes, logs)
