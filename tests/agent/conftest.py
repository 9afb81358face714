"""Fixtures for the agent tests: a fake model server and backends on ``tmp_path``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from agent.embedded import EmbeddedBackend
from bot.config.settings import Settings
from tests.agent.support import model_settings
from tests.fakes.openai_server import FakeOpenAIServer


@pytest.fixture
def fake_model() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def settings(state_dir: Path, fake_model: FakeOpenAIServer) -> Settings:
    return model_settings(state_dir, fake_model.base_url)


@pytest.fixture
async def backend(settings: Settings) -> AsyncIterator[EmbeddedBackend]:
    async with EmbeddedBackend(settings, max_retries=0) as started:
        yield started
