"""The group's recent chatter in the model's input (``Turn.chat_context``, design "Group
context"): it comes first, the addressed message after a header, and the offline model still
answers only the message."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from agent.embedded import EmbeddedBackend
from agent.offline_model import ADDRESSED_HEADER
from agent.turn_message import turn_message
from bot.workspace import ThreadWorkspace
from tests.agent.support import collect, final, offline_settings, turn

CONTEXT = "Recent messages in this chat, not addressed to you:\n[10:00] Carol: CI is red"


def test_the_context_comes_before_the_addressed_message(tmp_path: Path) -> None:
    workspace = ThreadWorkspace.for_thread(tmp_path, "t1")
    with_context = replace(turn("why?"), chat_context=CONTEXT)
    assert turn_message("why?", with_context, workspace) == f"{CONTEXT}\n\n{ADDRESSED_HEADER}\nwhy?"
    assert turn_message("why?", turn("why?"), workspace) == "why?"


async def test_the_offline_model_answers_only_the_addressed_message(state_dir: Path) -> None:
    async with EmbeddedBackend(offline_settings(state_dir)) as backend:
        thread = await backend.create_thread()
        events = await collect(backend.run(thread, replace(turn("why?"), chat_context=CONTEXT)))
    assert final(events).text.endswith("You said: why?")
