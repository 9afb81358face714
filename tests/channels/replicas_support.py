"""Several ``switchboard run`` replicas on one PostgreSQL schema, for the end-to-end tests of
design §11 "replicas": configs, processes, a model that names what it answers, and the
traffic of chats that each send their next message once the previous one is answered. The
processes are ``bench/replicas_fleet.py``'s, which the replica benchmark runs too."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import psycopg
from aiohttp import web
from typing_extensions import override

from bench.replicas_fleet import Replica
from bench.replicas_load import answered
from bench.soak_daemon import free_port
from bench.soak_model import SoakModel, question
from tests.fakes.common.waiting import eventually
from tests.fakes.openai_server import Reply, ToolCall
from tests.fakes.telegram_api import FakeTelegram

EXPIRY_S = 3.0
"""``daemon.replica_expiry_s`` of the test replicas: how soon a killed one's chats move."""
SECRET = "replica-webhook-secret"  # noqa: S105 - the webhook secret of the test
ASK = "clarify"
"""A user message containing this makes the model ask which colour (``ask_clarification``)."""


class ReplicaModel(SoakModel):
    """The soak's model (answers name the questions), which also asks a question when told."""

    @override
    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body: dict[str, Any] = await request.json()
        last = body["messages"][-1]
        if last.get("role") == "tool":
            return await self._perform(request, body, Reply(text=f"noted: {last['content']}"))
        if ASK in str(last.get("content")):
            ask = ToolCall(
                name="ask_clarification",
                arguments={"question": "Which colour?", "options": ["red", "blue"]},
            )
            return await self._perform(request, body, Reply(tool_calls=(ask,)))
        return await super()._chat(request)


def write_config(  # noqa: PLR0913 - what differs between the tests' replicas
    work: Path,
    name: str,
    *,
    fake: FakeTelegram,
    model: SoakModel,
    store_url: str,
    schema: str,
    webhook: bool,
) -> Replica:
    port = free_port()
    telegram: dict[str, Any] = {
        "enabled": True, "token": fake.token, "api_base_url": fake.api_origin,
    }  # fmt: skip
    if webhook:
        telegram["mode"] = "webhook"
        telegram["webhook"] = {
            "url": f"http://127.0.0.1:{port}/telegram/webhook", "secret_token": SECRET,
        }  # fmt: skip
    data = {
        "config_version": 1,
        "state_dir": str(work / name),
        "log": {"level": "INFO"},
        "http": {"enabled": True, "host": "127.0.0.1", "port": port},
        "access": {"dm_policy": "open"},
        "agent": {
            "backend": "embedded",
            "run_timeout_s": 60,
            "model": {"base_url": model.base_url, "api_key": "sk-test", "name": "soak-model"},
        },
        "store": {"url": store_url, "schema": schema, "pool_size": 4},
        "daemon": {"shutdown_grace_s": 5, "replica_id": None, "replica_expiry_s": EXPIRY_S},
        "channels": {"telegram": telegram},
    }
    path = work / f"{name}.yaml"
    path.write_text(json.dumps(data))  # JSON is YAML
    return Replica(name=name, config=path, port=port, log=work / f"{name}.log")


async def converse(fake: FakeTelegram, chat_id: int, chat: int, messages: int) -> None:
    """Send ``messages`` questions to ``chat_id``, each once the previous one is answered."""
    for index in range(1, messages + 1):
        fake.push_message(question(chat, index), chat_id=chat_id, user_id=chat_id)
        marker = f"q{chat}-{index}"
        await eventually(functools.partial(_answered, fake, chat_id, marker), None, every=0.05)


def _answered(fake: FakeTelegram, chat_id: int, marker: str) -> bool:
    return marker in answered(fake, chat_id)


async def chats_by_pid(store_url: str, schema: str) -> dict[int, int]:
    """How many chats each live replica holds, by its process id, read from the store."""
    query = psycopg.sql.SQL(
        "SELECT r.pid, count(*) FROM {schema}.chat_leases l"
        " JOIN {schema}.replicas r ON r.id = l.owner GROUP BY r.pid"
    ).format(schema=psycopg.sql.Identifier(schema))
    async with await psycopg.AsyncConnection.connect(store_url, autocommit=True) as conn:
        cursor = await conn.execute(query)
        return {int(pid): int(count) for pid, count in await cursor.fetchall()}


def every(replicas: list[Replica]) -> Iterator[Replica]:
    return (replica for replica in replicas if replica.process is not None)


async def wait_ready(replica: Replica, within: float = 60.0) -> None:
    """Until the replica's ``/readyz`` says ready (its channel runs); fails past ``within``."""
    import aiohttp  # noqa: PLC0415 - only the e2e tests need a client

    async with aiohttp.ClientSession() as session:

        async def ready() -> bool:
            try:
                async with session.get(f"http://127.0.0.1:{replica.port}/readyz") as response:
                    return response.status == 200
            except aiohttp.ClientError:
                return False  # not listening yet

        await eventually(ready, within, every=0.1)


async def killed(replica: Replica) -> int:
    """SIGKILL, off the event loop; the exit code."""
    await asyncio.to_thread(replica.kill9)
    return replica.exit_codes[-1]


async def stopped(replica: Replica) -> int:
    """SIGTERM and wait (SIGKILL past the grace), off the event loop; the exit code."""
    await asyncio.to_thread(replica.stop)
    return replica.exit_codes[-1]


@contextlib.asynccontextmanager
async def fleet(replicas: list[Replica]) -> AsyncIterator[dict[str, int]]:
    """Start every replica and wait until each is ready; on the way out, stop the ones still
    running and record their exit codes, by name, in the yielded dict."""
    codes: dict[str, int] = {}
    for replica in replicas:
        replica.start()
    try:
        await asyncio.gather(*(wait_ready(r) for r in replicas))
        yield codes
    finally:
        for replica in list(every(replicas)):
            codes[replica.name] = await stopped(replica)
