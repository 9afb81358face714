"""The offline echo backend: no model, so no usage, and nothing ever waits for decisions."""

from __future__ import annotations

from pathlib import Path

from agent.echo import OFFLINE_PREFIX, EchoBackend
from bot.ports import FinalAnswer
from bot.ports.agent import Decision
from tests.agent.support import collect, decide, final, offline_settings, turn, usages


async def test_a_reply_reports_no_usage(tmp_path: Path) -> None:
    backend = EchoBackend(offline_settings(tmp_path))

    events = await collect(backend.run(await backend.create_thread(), turn("hello")))

    assert final(events).text == f"{OFFLINE_PREFIX} You said: hello"
    assert usages(events) == []


async def test_decisions_find_nothing_pending(tmp_path: Path) -> None:
    backend = EchoBackend(offline_settings(tmp_path))

    events = await collect(backend.run("t1", decide(Decision(type="approve"))))

    assert events == [FinalAnswer(text="")]
