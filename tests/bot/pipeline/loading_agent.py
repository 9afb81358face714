"""LoadingAgent: FakeAgent behind a load the test holds, as the lazily loaded embedded agent."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from bot.ports import AgentEvent, Turn
from tests.fakes.agent import FakeAgent


class LoadingAgent:
    """``AgentBackend``: runs wait until ``loaded`` is set (``waiting`` says one does)."""

    def __init__(self, inner: FakeAgent) -> None:
        self.inner = inner
        self.loaded = asyncio.Event()
        self.waiting = asyncio.Event()
        self.warmed = 0

    @property
    def description(self) -> str:
        return "fake agent, loaded when the test says"

    async def start(self) -> None:
        """Nothing to open before the load."""

    def warm(self) -> None:
        self.warmed += 1

    async def ready(self) -> None:
        self.waiting.set()
        await self.loaded.wait()

    async def create_thread(self) -> str:
        return await self.inner.create_thread()

    async def run(self, thread_id: str, turn: Turn) -> AsyncGenerator[AgentEvent, None]:
        await self.ready()
        async for event in self.inner.run(thread_id, turn):
            yield event

    async def cancel(self, thread_id: str) -> None:
        await self.inner.cancel(thread_id)

    async def aclose(self) -> None:
        await self.inner.aclose()
