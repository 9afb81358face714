"""The built-in offline echo backend: no model, no network, the whole pipeline still works.

It says it is offline, echoes, and understands two explicit triggers so clarifications and
file delivery can be tried without a model:

- ``ask: <question> | <option> | <option>`` asks a clarifying question; the answer resumes
  the thread and is echoed back.
- ``file: <name> | <content>`` writes ``outputs/<name>`` and presents it for delivery.

It has no model, so it reports no ``ModelUsage``, and it never waits for decisions: decisions
sent to it find nothing pending and end the turn with an empty answer, as the other backends'.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncGenerator

from bot.config.settings import Settings
from bot.ports import (
    AgentEvent,
    ClarificationRequest,
    FinalAnswer,
    PresentedFile,
    TextDelta,
    Turn,
)
from bot.workspace import PathEscape, ThreadWorkspace, safe_file_name

OFFLINE_PREFIX = "(offline echo — no model configured)"


class EchoBackend:
    def __init__(self, settings: Settings) -> None:
        self._workspace_dir = settings.workspace_root

    @property
    def description(self) -> str:
        return "offline echo backend (no model API key configured)"

    async def start(self) -> None:
        """Nothing to open."""

    def warm(self) -> None:
        """Nothing to load."""

    async def ready(self) -> None:
        """Always ready."""

    async def create_thread(self) -> str:
        return uuid.uuid4().hex

    async def cancel(self, thread_id: str) -> None:
        """Runs are local; cancelling the iterating task is enough."""

    async def aclose(self) -> None:
        """Nothing to close."""

    async def run(self, thread_id: str, turn: Turn) -> AsyncGenerator[AgentEvent, None]:
        if turn.resume_decisions is not None:
            yield FinalAnswer(text="")  # it never asks for decisions: nothing is pending
            return
        if turn.resume_answer is not None:
            reply = f"{OFFLINE_PREFIX} You chose: {turn.resume_answer}"
            async for event in _stream(reply):
                yield event
            return
        text = turn.text.strip()
        if text.lower().startswith("ask:"):
            question, *options = [part.strip() for part in text[4:].split("|")]
            yield ClarificationRequest(question=question or "Which one?", options=tuple(options))
            return
        if text.lower().startswith("file:"):
            async for event in self._write_file(thread_id, text[5:]):
                yield event
            return
        async for event in _stream(_echo_text(turn)):
            yield event

    async def _write_file(self, thread_id: str, spec: str) -> AsyncGenerator[AgentEvent, None]:
        name, _, content = (part.strip() for part in spec.partition("|"))
        workspace = ThreadWorkspace.for_thread(self._workspace_dir, thread_id)
        workspace.create()
        try:
            path = workspace.resolve(safe_file_name(name or "echo.txt"))
        except PathEscape as exc:
            yield FinalAnswer(text=f"{OFFLINE_PREFIX} Could not write the file: {exc}")
            return
        await asyncio.to_thread(path.write_text, content + "\n", "utf-8")
        reply = f"{OFFLINE_PREFIX} Wrote {path.name}."
        async for event in _stream(reply, files=(PresentedFile(path=path, name=path.name),)):
            yield event


def _echo_text(turn: Turn) -> str:
    lines = [f"{OFFLINE_PREFIX} You said: {turn.text}" if turn.text else OFFLINE_PREFIX]
    lines += [f"Received file: {upload.name} ({upload.size} bytes)" for upload in turn.uploads]
    lines += list(turn.notes)
    return "\n".join(lines)


async def _stream(
    text: str, files: tuple[PresentedFile, ...] = ()
) -> AsyncGenerator[AgentEvent, None]:
    """Yield the reply word by word, as a model would, then the final answer."""
    words = text.split(" ")
    for index, word in enumerate(words):
        yield TextDelta(text=word if index == 0 else f" {word}")
    yield FinalAnswer(text=text, files=files)
