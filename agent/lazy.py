"""The embedded agent, loaded when the first turn needs it (design §6, §16 "start").

LangGraph and LangChain take about a second to import and some 40 MB to hold (the OpenAI
client 30 MB more, with a model endpoint): a daemon that has not answered anything yet needs
none of them. ``LazyEmbeddedBackend`` is what
the registry gives as ``embedded``: it starts at once, imports ``agent.embedded`` in a worker
thread (so the event loop keeps serving) when the first thread is run, opens it there, and
hands every call on to it. Crash recovery that requeued turns loads it at once (``warm``), so
their re-runs need not wait for it. A failure to open (the checkpoint database unreachable)
fails that turn with a clear error and is tried again by the next one.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import uuid
from collections.abc import AsyncGenerator
from typing import Protocol, cast

from bot.config.settings import Settings
from bot.errors import AgentError
from bot.ports import AgentBackend, AgentEvent, Turn

logger = logging.getLogger(__name__)

EMBEDDED_MODULE = "agent.embedded"


class _Probing(AgentBackend, Protocol):
    async def probe(self) -> str: ...


def describe(settings: Settings) -> str:
    """The embedded backend's description (``EmbeddedBackend.description``), without it."""
    model = settings.agent.model
    if model.offline:
        return "embedded LangGraph agent, offline echo model (no model API key configured)"
    return f"embedded LangGraph agent, model {model.name} at {model.base_url}"


class LazyEmbeddedBackend:
    """``AgentBackend``: the embedded agent, imported and opened on first use."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._backend: _Probing | None = None
        self._load: asyncio.Task[_Probing] | None = None
        """The load, a task of this backend's own: a turn cancelled while it waits (``/stop``,
        a shutdown) must not cancel it halfway, leaving a checkpoint connection open."""
        self._closed = False

    @property
    def description(self) -> str:
        return describe(self._settings)

    @property
    def loaded(self) -> bool:
        return self._backend is not None

    async def start(self) -> None:
        logger.info("agent backend ready: %s (loaded at the first turn)", self.description)

    async def _new(self) -> _Probing:
        module = await asyncio.to_thread(importlib.import_module, EMBEDDED_MODULE)
        return cast(_Probing, module.EmbeddedBackend(self._settings))

    def warm(self) -> None:
        """Begin the load in the background unless it is done or under way."""
        if self._backend is None and not self._closed:
            self._loading()

    async def ready(self) -> None:
        await self._opened()

    def _loading(self) -> asyncio.Task[_Probing]:
        """The load under way, started if there is none (first use, or the last one failed)."""
        if self._load is None or self._load.done():
            self._load = asyncio.create_task(self._open(), name="agent:load")
            self._load.add_done_callback(_observed)
        return self._load

    async def _opened(self) -> _Probing:
        if self._backend is not None:
            return self._backend
        if self._closed:
            raise AgentError("The agent is stopping.", detail="LazyEmbeddedBackend closed")
        return await asyncio.shield(self._loading())

    async def _open(self) -> _Probing:
        backend = await self._new()
        try:
            await backend.start()
        except BaseException as exc:
            await backend.aclose()  # whatever it opened before it failed
            if isinstance(exc, AgentError | asyncio.CancelledError):
                raise
            logger.exception("the embedded agent could not start")
            raise AgentError(
                "The agent could not start; try again in a moment.", detail=str(exc)
            ) from exc
        self._backend = backend
        return backend

    async def create_thread(self) -> str:
        return uuid.uuid4().hex  # as EmbeddedBackend: no need to load it for a name

    async def run(self, thread_id: str, turn: Turn) -> AsyncGenerator[AgentEvent, None]:
        backend = await self._opened()
        async for event in backend.run(thread_id, turn):
            yield event

    async def cancel(self, thread_id: str) -> None:
        if self._backend is not None:
            await self._backend.cancel(thread_id)

    async def probe(self) -> str:
        """``switchboard check --online``: the model endpoint, through the real backend."""
        return await (await self._new()).probe()

    async def aclose(self) -> None:
        """Close the backend; a load under way is cancelled and awaited first (``_open``
        closes what it had opened)."""
        self._closed = True
        load, self._load = self._load, None
        if load is not None:
            load.cancel()
            await asyncio.gather(load, return_exceptions=True)
        backend, self._backend = self._backend, None
        if backend is not None:
            await backend.aclose()


def _observed(load: asyncio.Task[_Probing]) -> None:
    """Retrieve a failed load's error: a warm load nobody awaited must not leave it
    "never retrieved" (``_open`` logged it; the next turn loads again)."""
    if not load.cancelled():
        load.exception()
