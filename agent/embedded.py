"""The embedded agent backend: the LangGraph graph in-process, checkpoints durable (design §6).

Checkpoints live in ``state_dir/agent.db`` (not the daemon's own database), or in the
daemon's PostgreSQL database when the store is there (``agent/checkpoints.py``), so threads,
history, pending clarifications and pending approval requests survive restarts. A run streams
the graph and translates it into ``AgentEvent`` values (``agent/embedded_events.py``): assistant
text tokens, tool activity, what each model call used, then a clarification or an approval
request (the run pauses) or a final answer with the files presented during this turn.

Decisions (``Turn.resume_decisions``) resume the thread's pending approval request; when none is
pending (decided already, or the thread moved on) the run does nothing and ends with an empty
``FinalAnswer``, which the kernel does not send (``agent/embedded_input.py``).

Cancelling the task that iterates ``run`` is how a local run is stopped. The next turn on the
thread starts from the last checkpoint; ``agent.graph.close_dangling_tool_calls`` repairs a tool
call the cancelled run left without a result.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncGenerator, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphRecursionError
from langgraph.types import Command, StreamMode
from typing_extensions import override

from agent.approval_tools import approval_tools_of
from agent.checkpoints import checkpointer
from agent.embedded_events import TurnRecorder
from agent.embedded_input import NothingToRun, graph_input
from agent.graph import REQUEST_TIMEOUT_S, AgentGraph, ThreadState, build_graph, chat_model
from agent.handoff_tool import HANDOFF_KEY
from agent.lazy import describe
from agent.schedule_tools import SCHEDULER_KEY
from agent.tools import build_tools
from bot.config.settings import Settings
from bot.config.store import StoreBackend
from bot.errors import AgentError
from bot.lifecycle import StartClose
from bot.ports import AgentEvent, Turn
from bot.workspace import PathEscape, ThreadWorkspace

if TYPE_CHECKING:
    import openai

logger = logging.getLogger(__name__)

RECURSION_LIMIT = 50
SETTLED_REMEMBERED = 10_000
_STREAM_MODES: list[StreamMode] = ["messages", "updates"]
UNEXPECTED = "The agent failed unexpectedly."
OFFLINE_MODEL_NAME = "offline-echo"


class EmbeddedBackend(StartClose):
    """``AgentBackend`` running the graph of ``agent.graph`` in this process."""

    def __init__(
        self,
        settings: Settings,
        *,
        max_retries: int = 2,
        request_timeout_s: float = REQUEST_TIMEOUT_S,
    ) -> None:
        """``max_retries`` and ``request_timeout_s`` apply to each model request; the run as a
        whole is bounded by the router (``agent.run_timeout_s``)."""
        self._settings = settings
        self._state_dir = settings.state_dir
        self._max_retries = max_retries
        self._request_timeout_s = request_timeout_s
        self._checkpoints: AsyncExitStack | None = None
        self._http: openai.DefaultAsyncHttpxClient | None = None
        self._endpoint_reason: Callable[[BaseException], str | None] | None = None
        """What the model endpoint's errors mean (``None`` with the offline model)."""
        self._graph: AgentGraph | None = None
        self._settled: dict[str, None] = {}
        """Threads whose last run this process finished: their checkpoint cannot hold a user
        message left unanswered by a crash, so their next turn skips that check (it reads and
        decodes the whole thread). Only where this process is the thread's one writer (the
        SQLite checkpointer); with PostgreSQL another replica may have run it since."""
        self._sole_writer = settings.store.backend is StoreBackend.SQLITE
        model = settings.agent.model
        self._model_name = OFFLINE_MODEL_NAME if model.offline else model.name
        """What ``ModelUsage`` names when the provider's reply does not name its model."""

    @property
    def description(self) -> str:
        return describe(self._settings)

    @override
    async def start(self) -> None:
        agent = self._settings.agent
        stack = AsyncExitStack()
        saver = await stack.enter_async_context(checkpointer(self._settings.store, self._state_dir))
        self._checkpoints = stack
        if not agent.model.offline:
            # The OpenAI SDK loads only for an endpoint (``agent/openai_endpoint.py``).
            from agent.openai_endpoint import connection_pool, endpoint_reason  # noqa: PLC0415

            self._http = connection_pool()
            self._endpoint_reason = endpoint_reason
        model = chat_model(
            agent.model,
            max_retries=self._max_retries,
            timeout_s=self._request_timeout_s,
            http_async_client=self._http,
        )
        tools = build_tools(self._settings.workspace_root)
        self._graph = build_graph(
            model, tools, agent.system_prompt, saver, approval_tools=approval_tools_of(agent)
        )
        logger.info("agent backend started: %s", self.description)

    @override
    async def aclose(self) -> None:
        self._graph = None
        http, self._http = self._http, None
        checkpoints, self._checkpoints = self._checkpoints, None
        try:
            if http is not None:
                await http.aclose()
        finally:
            if checkpoints is not None:
                await checkpoints.aclose()

    def warm(self) -> None:
        """Nothing loads lazily: ``start`` opened everything."""

    async def ready(self) -> None:
        """Ready once started."""

    async def create_thread(self) -> str:
        return uuid.uuid4().hex

    async def probe(self) -> str:
        """Ask the model endpoint for its model list (``switchboard check --online``)."""
        model = self._settings.agent.model
        if model.offline:
            return "offline echo model; no endpoint to probe"
        from agent.openai_endpoint import probe_endpoint  # noqa: PLC0415 - see ``start``

        return await probe_endpoint(model)

    async def cancel(self, thread_id: str) -> None:
        """Nothing to do: the router cancels the task iterating ``run`` (see module doc)."""

    async def run(self, thread_id: str, turn: Turn) -> AsyncGenerator[AgentEvent, None]:
        graph = self._require_graph()
        workspace = _workspace(self._settings.workspace_root, thread_id)
        config: RunnableConfig = {
            "configurable": {
                "thread_id": thread_id,
                SCHEDULER_KEY: turn.scheduler,
                HANDOFF_KEY: turn.handoff,
            },
            "recursion_limit": RECURSION_LIMIT,
        }
        recorder = TurnRecorder(model_name=self._model_name)
        settled = thread_id in self._settled
        self._settled.pop(thread_id, None)  # unsettled until this run finishes
        try:
            await asyncio.to_thread(workspace.create)
            start = await graph_input(graph, config, turn, workspace, settled=settled)
            if not isinstance(start, NothingToRun):
                async for event in _events(graph, start, config, recorder):
                    yield event
        except AgentError:
            raise
        except Exception as exc:
            reason = self._reason(exc)
            if reason is None:
                logger.exception("agent run failed on thread %s", thread_id)
            # A short user-facing reason (design §6); the exception's text goes to ``detail``.
            raise AgentError(reason or UNEXPECTED, detail=f"{type(exc).__name__}: {exc}") from exc
        if self._sole_writer and (settled or not isinstance(start, NothingToRun)):
            self._settled[thread_id] = None
            if len(self._settled) > SETTLED_REMEMBERED:
                del self._settled[next(iter(self._settled))]  # the longest settled
        yield recorder.outcome(workspace)

    def _reason(self, exc: BaseException) -> str | None:
        """What went wrong in a user's words; ``None`` for an error nobody expected."""
        if isinstance(exc, GraphRecursionError):
            return "The agent took too many steps and was stopped."
        return None if self._endpoint_reason is None else self._endpoint_reason(exc)

    def _require_graph(self) -> AgentGraph:
        if self._graph is None:
            raise AgentError("The agent is not running.", detail="EmbeddedBackend not started")
        return self._graph


async def _events(
    graph: AgentGraph,
    start: Command[Any] | ThreadState | None,
    config: RunnableConfig,
    recorder: TurnRecorder,
) -> AsyncGenerator[AgentEvent, None]:
    """Stream the graph from ``start``, as agent events."""
    stream = graph.astream(start, config, stream_mode=_STREAM_MODES, durability="sync")
    async with contextlib.aclosing(cast(AsyncGenerator[Any, None], stream)):
        async for mode, chunk in stream:
            for event in recorder.feed(mode, chunk):
                yield event


def _workspace(state_dir: Path, thread_id: str) -> ThreadWorkspace:
    try:
        return ThreadWorkspace.for_thread(state_dir, thread_id)
    except PathEscape as exc:
        raise AgentError("This conversation's thread id is not usable.", detail=str(exc)) from exc
