"""Fixtures for the agent tests: a fake model server and backends on ``tmp_path``; for the
remote approvals and usage tests, one ``langgraph dev`` (our graph and a LangChain
``create_agent`` one, ``write_file`` gated in both) shared by the package's modules."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from agent.embedded import EmbeddedBackend
from bot.config.settings import Settings
from tests.agent.support import SYSTEM_PROMPT, model_settings
from tests.fakes.langgraph_server import APPROVALS_CONFIG, LangGraphDevServer
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


@pytest.fixture(scope="package")
def gated_model() -> Iterator[FakeOpenAIServer]:
    """The model behind ``gated_server``; tests look only at the requests they caused."""
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture(scope="package")
def gated_server_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("gated-server-state")


@pytest.fixture(scope="package")
def gated_server(
    gated_model: FakeOpenAIServer,
    gated_server_state: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[LangGraphDevServer]:
    """``langgraph dev`` serving ``agent`` (ours) and ``hitl`` (``create_agent``)."""
    env = {
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": gated_model.base_url,
        "OPENAI_MODEL": "fake-model",
        "SWITCHBOARD_STATE_DIR": str(gated_server_state),
        "SWITCHBOARD_SYSTEM_PROMPT": SYSTEM_PROMPT,
        "SWITCHBOARD_APPROVAL_TOOLS": "write_file",
    }
    workdir = tmp_path_factory.mktemp("langgraph-gated")
    with LangGraphDevServer(workdir, env, config=APPROVALS_CONFIG) as server:
        yield server
