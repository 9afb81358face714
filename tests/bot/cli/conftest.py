"""What the CLI tests share: a configuration over an empty, migrated SQLite store."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from store.sqlite import SqliteStore


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """``switchboard.yaml``, Telegram enabled (no token: nothing connects), its store made."""
    state_dir = tmp_path / "state"

    async def create() -> None:
        async with SqliteStore(state_dir / "switchboard.db"):
            pass

    asyncio.run(create())
    path = tmp_path / "switchboard.yaml"
    path.write_text(
        f"config_version: 1\nstate_dir: {state_dir}\nhttp: {{host: 127.0.0.1, port: 9}}\n"
        "channels: {telegram: {enabled: true}}\n"
    )
    return path
