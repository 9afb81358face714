"""With a PostgreSQL store, the embedded agent's checkpoints live in the same database and
schema: a thread begun by one replica is continued by another (design §6, §11)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import psycopg
import pytest

from agent.embedded import EmbeddedBackend
from bot.config.settings import Settings
from tests.agent.support import collect, final, model_settings, roles, turn
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.postgres import fresh_schema, require_postgres


@pytest.fixture
async def pg_schema() -> AsyncIterator[tuple[str, str]]:
    """A fresh schema on the test server, dropped afterwards."""
    url = require_postgres()
    async with fresh_schema(url, "t_agent") as schema:
        yield url, schema


def _on_postgres(state_dir: Path, base_url: str, url: str, schema: str) -> Settings:
    plain = model_settings(state_dir, base_url)
    data = plain.model_dump(mode="json", by_alias=True)
    data["store"] = {"url": url, "schema": schema}
    for secret in ("api_key",):
        data["agent"]["model"][secret] = "sk-test"
    return Settings.model_validate(data)


async def test_two_replicas_share_threads_through_postgres_checkpoints(
    tmp_path: Path, pg_schema: tuple[str, str]
) -> None:
    url, schema = pg_schema
    with FakeOpenAIServer() as model:
        model.script(Reply(text="Noted: 42."), Reply(text="It was 42."))
        first_settings = _on_postgres(tmp_path / "one", model.base_url, url, schema)
        second_settings = _on_postgres(tmp_path / "two", model.base_url, url, schema)
        first, second = EmbeddedBackend(first_settings), EmbeddedBackend(second_settings)
        await asyncio.gather(first.start(), second.start())  # both run the saver's setup
        try:
            thread = await first.create_thread()
            await collect(first.run(thread, turn("remember 42")))
            answer = final(await collect(second.run(thread, turn("what number?"))))
        finally:
            await asyncio.gather(first.aclose(), second.aclose())
        requests = list(model.requests)
    assert answer.text == "It was 42."
    assert roles(requests[1]) == ["system", "user", "assistant", "user"]
    assert not (tmp_path / "one" / "agent.db").exists()
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cursor = await conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = %s"
            " AND table_name = 'checkpoints'",
            (schema,),
        )
        found = await cursor.fetchone()
    assert found == (1,)
