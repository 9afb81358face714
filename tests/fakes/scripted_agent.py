"""ScriptedAgent: an AgentBackend whose events a test feeds one at a time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from bot.ports import AgentEvent, ClarificationRequest, FinalAnswer, Turn
from bot.ports.agent import ApprovalRequest


class ScriptedAgent:
    """An agent whose events the test feeds one by one (streaming at the test's pace); a run
    ends after a final answer, a question or an approval request, as a backend's does."""

    def __init__(self) -> None:
        self.events: asyncio.Queue[AgentEvent] = asyncio.Queue()
        self.turns: list[Turn] = []
        self._count = 0

    @property
    def description(self) -> str:
        return "scripted agent"

    async def start(self) -> None:
        """Nothing to open."""

    async def aclose(self) -> None:
        """Nothing to close."""

    def warm(self) -> None:
        """Nothing to load."""

    async def ready(self) -> None:
        """Always ready."""

    async def create_thread(self) -> str:
        self._count += 1
        return f"s{self._count}"

    async def cancel(self, thread_id: str) -> None:
        """Runs end when the test feeds a final."""

    def feed(self, event: AgentEvent) -> None:
        self.events.put_nowait(event)

    async def run(self, thread_id: str, turn: Turn) -> AsyncGenerator[AgentEvent, None]:
        self.turns.append(turn)
        while True:
            event = await self.events.get()
            yield event
            if isinstance(event, FinalAnswer | ClarificationRequest | ApprovalRequest):
                return


__all__ = ["ScriptedAgent"]
