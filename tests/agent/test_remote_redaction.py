"""The remote agent's URL may carry credentials; logs and error texts never show
them."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from agent.remote import RemoteBackend
from bot.config.settings import AgentSettings, RemoteSettings, Settings
from bot.errors import AgentError
from tests.fakes.langgraph_server import free_port

PASSWORD = "pw-in-the-url-31"  # noqa: S105 - a test value
TOKEN = "tok-in-the-query-77"  # noqa: S105 - a test value


def remote_settings(url: str, state_dir: Path) -> Settings:
    remote = RemoteSettings(url=url, assistant_id="agent", api_key=SecretStr("lg-key"))
    return Settings(
        config_version=1, state_dir=state_dir, agent=AgentSettings(backend="remote", remote=remote)
    )


async def test_credentials_in_the_url_are_redacted_from_errors_and_the_description(
    tmp_path: Path,
) -> None:
    port = free_port()
    url = f"http://operator:{PASSWORD}@127.0.0.1:{port}/lg?token={TOKEN}&region=eu"
    backend = RemoteBackend(remote_settings(url, tmp_path), connect_retries=0)

    with pytest.raises(AgentError) as caught:
        await backend.start()
    await backend.aclose()

    shown = f"{backend.description}\n{caught.value.reason}\n{caught.value.detail}"
    assert PASSWORD not in shown
    assert TOKEN not in shown
    assert f"http://operator:***@127.0.0.1:{port}/lg?token=***&region=eu" in backend.description
    assert f"127.0.0.1:{port}" in caught.value.reason
