"""Two or more daemons on one PostgreSQL schema in one process: what the replica tests share."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from store.postgres import PostgresStore
from tests.bot.harness import Running, make_settings, running
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import FakeChannel


@dataclass(kw_only=True)
class Side:
    """One replica: its channel, its agent and the running daemon."""

    channel: FakeChannel
    agent: FakeAgent
    run: Running

    @property
    def replica_id(self) -> str:
        return self.run.kernel.fleet.ownership.replica_id

    async def held(self) -> int:
        return await self.run.kernel.store.leases.held(self.replica_id)


@asynccontextmanager
async def replica(
    tmp_path: Path, name: str, schema: tuple[str, str], **sections: Any
) -> AsyncIterator[Side]:
    url, schema_name = schema
    settings = make_settings(tmp_path / name, store={"url": url, "schema": schema_name}, **sections)
    channel, agent = FakeChannel(), FakeAgent()
    store = PostgresStore.from_url(url, schema=schema_name)
    async with running(settings, [channel], agent, store=store) as run:
        yield Side(channel=channel, agent=agent, run=run)
