"""The lazily loaded embedded agent: loaded in the background on ``warm``, waited for by
``ready``, and a load under way ended by ``aclose`` (design §6, §11)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agent.lazy import LazyEmbeddedBackend
from bot.errors import AgentError
from tests.agent.support import collect, final, offline_settings, turn

LOAD_S = 60.0
"""Importing LangGraph on a loaded 2-core machine can take seconds."""


def _load_tasks() -> list[asyncio.Task[object]]:
    return [task for task in asyncio.all_tasks() if task.get_name() == "agent:load"]


async def test_warm_loads_in_a_task_of_its_own_and_ready_waits_for_it(tmp_path: Path) -> None:
    backend = LazyEmbeddedBackend(offline_settings(tmp_path))
    await backend.start()
    try:
        backend.warm()
        backend.warm()  # once under way, not again
        assert len(_load_tasks()) == 1
        async with asyncio.timeout(LOAD_S):
            await backend.ready()
        assert backend.loaded
        backend.warm()  # loaded: nothing to do
        assert _load_tasks() == []
        events = await collect(backend.run(await backend.create_thread(), turn("hello")))
        assert "hello" in final(events).text
    finally:
        await backend.aclose()


async def test_closing_ends_a_load_under_way(tmp_path: Path) -> None:
    backend = LazyEmbeddedBackend(offline_settings(tmp_path))
    await backend.start()
    backend.warm()
    (load,) = _load_tasks()
    await backend.aclose()
    assert load.done()
    assert not backend.loaded
    backend.warm()  # closed: no new load
    assert _load_tasks() == []
    with pytest.raises(AgentError):
        await backend.ready()
