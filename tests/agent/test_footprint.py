"""What the embedded agent loads for a turn with the offline echo model on SQLite (the quick
start): checkpoints in ``agent.db`` without psycopg, its pool or the PostgreSQL saver (about
10 MB; ``agent/postgres_checkpoints.py`` loads them for a PostgreSQL store only), and no OpenAI
SDK (about 30 MB with ``langchain-openai``; ``agent/openai_endpoint.py`` loads it for a model
endpoint only).

A fresh interpreter runs the turn: this test process has imported everything already."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

TURN_ON_SQLITE = """
import asyncio, json, sys
from pathlib import Path

from agent.embedded import EmbeddedBackend
from bot.config.settings import Settings
from bot.messages import Sender
from bot.ports import Turn


async def main() -> None:
    settings = Settings(config_version=1, state_dir=Path(sys.argv[1]))
    sender = Sender(id="u1", display_name="Ada")
    async with EmbeddedBackend(settings) as backend:
        thread = await backend.create_thread()
        events = [event async for event in backend.run(thread, Turn(text="hi", sender=sender))]
    print(json.dumps({
        "answered": type(events[-1]).__name__,
        "postgres": sorted(name for name in sys.modules if name.split(".")[0] in
                           ("psycopg", "psycopg_pool", "psycopg_binary")
                           or name.startswith("langgraph.checkpoint.postgres")),
        "openai": sorted(name for name in sys.modules
                         if name.split(".")[0] in ("openai", "langchain_openai")),
    }))


asyncio.run(main())
"""


def test_an_offline_turn_on_sqlite_loads_neither_psycopg_nor_openai(tmp_path: Path) -> None:
    done = subprocess.run(  # noqa: S603 - our own interpreter and script
        [sys.executable, "-c", TURN_ON_SQLITE, str(tmp_path / "state")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["answered"] == "FinalAnswer"
    assert (tmp_path / "state" / "agent.db").is_file()
    assert seen["postgres"] == []
    assert seen["openai"] == []
