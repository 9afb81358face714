from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from store.sqlite import SqliteStore
from tests.store.support import ManualClock


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "switchboard.db"


@pytest.fixture
async def store(db_path: Path, clock: ManualClock) -> AsyncIterator[SqliteStore]:
    async with SqliteStore(db_path, clock=clock) as opened:
        yield opened
