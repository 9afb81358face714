"""The embedded agent backend: the LangGraph graph in-process, checkpoints durable (design §6).

Checkpoints live in ``state_dir/agent.db`` (not the daemon's own database), or in the
daemon's PostgreSQL database when the store is there (``agent/checkpoints.py``), so threads,
history and pending clarifications survive restarts. A run streams the graph and translates it
into ``AgentEvent`` values: assistant text tokens, tool activity, a clarification (then the run
ends), and a final answer with the files presented during this turn.

Cancelling the task that iterates ``run`` is how a local run is stopped. The next turn on the
thread starts from the last checkpoint; ``agent.graph.close_dangling_tool_calls`` repairs a tool
call the cancelled run left without a result.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncGenerator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, cast

import openai
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphRecursionError
from langgraph.graph import MessagesState
from langgraph.types import Command, Interrupt, StateSnapshot, StreamMode
from typing_extensions import override

from agent.checkpoints import checkpointer
from agent.graph import MODEL_NODE, REQUEST_TIMEOUT_S, AgentGraph, build_graph, chat_model
from agent.handoff_tool import HANDOFF_KEY
from agent.lazy import describe
from agent.offline_model import ADDRESSED_HEADER
from agent.schedule_tools import SCHEDULER_KEY
from agent.tools import PRESENT_TOOL, build_tools
from bot.config.settings import Settings
from bot.config.store import StoreBackend
from bot.errors import AgentError
from bot.lifecycle import StartClose
from bot.ports import (
    AgentEvent,
    ClarificationRequest,
    FinalAnswer,
    PresentedFile,
    TextDelta,
    ToolActivity,
    Turn,
)
from bot.workspace import PathEscape, ThreadWorkspace

logger = logging.getLogger(__name__)

RECURSION_LIMIT = 50
SETTLED_REMEMBERED = 10_000
_STREAM_MODES: list[StreamMode] = ["messages", "updates"]
_EXPECTED_ERRORS = (openai.OpenAIError, GraphRecursionError)
PART_SEPARATOR = "\n\n"


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
        self._graph: AgentGraph | None = None
        self._settled: dict[str, None] = {}
        """Threads whose last run this process finished: their checkpoint cannot hold a user
        message left unanswered by a crash, so their next turn skips that check (it reads and
        decodes the whole thread). Only where this process is the thread's one writer (the
        SQLite checkpointer); with PostgreSQL another replica may have run it since."""
        self._sole_writer = settings.store.backend is StoreBackend.SQLITE

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
            self._http = openai.DefaultAsyncHttpxClient()
        model = chat_model(
            agent.model,
            max_retries=self._max_retries,
            timeout_s=self._request_timeout_s,
            http_async_client=self._http,
        )
        tools = build_tools(self._settings.workspace_root)
        self._graph = build_graph(model, tools, agent.system_prompt, saver)
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
        key = model.api_key.get_secret_value() if model.api_key else ""
        client = openai.AsyncOpenAI(
            base_url=model.base_url, api_key=key or "not-needed", timeout=10.0, max_retries=0
        )
        try:
            listing = await client.models.list()
        except openai.NotFoundError:
            return f"{model.base_url} answers (it has no /models endpoint)"
        except openai.AuthenticationError as exc:
            raise AgentError("the model endpoint rejected the API key", detail=str(exc)) from None
        except openai.APIConnectionError as exc:
            raise AgentError(f"cannot reach {model.base_url}", detail=str(exc)) from None
        except openai.APIStatusError as exc:
            raise AgentError(f"{model.base_url} answered HTTP {exc.status_code}") from None
        finally:
            await client.close()
        names = {item.id for item in listing.data}
        found = "listed" if model.name in names else "not in its model list"
        return f"{model.base_url} answers; model {model.name} {found}"

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
        recorder = _TurnRecorder()
        settled = thread_id in self._settled
        self._settled.pop(thread_id, None)  # unsettled until this run finishes
        try:
            await asyncio.to_thread(workspace.create)
            graph_input = await _graph_input(graph, config, turn, workspace, settled=settled)
            stream = graph.astream(
                graph_input, config, stream_mode=_STREAM_MODES, durability="sync"
            )
            async with contextlib.aclosing(cast(AsyncGenerator[Any, None], stream)):
                async for mode, chunk in stream:
                    for event in recorder.feed(mode, chunk):
                        yield event
        except _EXPECTED_ERRORS as exc:
            raise translate_error(exc) from exc
        except Exception as exc:
            logger.exception("agent run failed on thread %s", thread_id)
            raise translate_error(exc) from exc
        if self._sole_writer:
            self._settled[thread_id] = None
            if len(self._settled) > SETTLED_REMEMBERED:
                del self._settled[next(iter(self._settled))]  # the longest settled
        yield recorder.outcome(workspace)

    def _require_graph(self) -> AgentGraph:
        if self._graph is None:
            raise AgentError("The agent is not running.", detail="EmbeddedBackend not started")
        return self._graph


def _workspace(state_dir: Path, thread_id: str) -> ThreadWorkspace:
    try:
        return ThreadWorkspace.for_thread(state_dir, thread_id)
    except PathEscape as exc:
        raise AgentError("This conversation's thread id is not usable.", detail=str(exc)) from exc


async def _graph_input(
    graph: AgentGraph,
    config: RunnableConfig,
    turn: Turn,
    workspace: ThreadWorkspace,
    *,
    settled: bool = False,
) -> Command[Any] | MessagesState | None:
    """Resume the pending question with the answer, or add the turn as a user message.

    An answer for a thread with nothing pending (answered twice, or lost) is treated as an
    ordinary message rather than failing the turn. A turn re-run after a crash finds its
    message already checkpointed, unanswered: the run continues from there (``None``)
    instead of showing the model the same message twice. A ``settled`` thread (its last run
    finished in this process) cannot hold one, and is not read for it.
    """
    if turn.resume_answer is not None:
        pending = (await graph.aget_state(config)).interrupts
        if len(pending) == 1:
            return Command(resume=turn.resume_answer)
        if pending:
            return Command(resume={pending[0].id: turn.resume_answer})
        logger.info("no pending question on thread; treating the answer as a message")
        text = turn.resume_answer
    else:
        text = turn.text
    content = turn_message(text, turn, workspace)
    if not settled:
        left = _left_unanswered(await graph.aget_state(config))
        if content in left:
            logger.info("the thread already holds this message unanswered; continuing from it")
            return None
        for held in left:
            if content.startswith(held + MERGED_SEPARATOR):
                logger.info("the thread holds this turn's first messages; adding the rest")
                content = content[len(held) + len(MERGED_SEPARATOR) :]
                break
    return {"messages": [HumanMessage(content=content)]}


MERGED_SEPARATOR = "\n\n"
"""How the kernel joins the texts of messages merged into one turn (``bot/pipeline/turns.py``)."""


def _left_unanswered(state: StateSnapshot) -> list[str]:
    """What an unfinished run left: the user messages since the last answer, as the texts a
    turn re-running them could carry (the last one alone, the last two merged, ...), longest
    first. A finished run (nothing ``next``) left none."""
    messages = state.values.get("messages", []) if isinstance(state.values, dict) else []
    if not state.next:
        return []
    users: list[str] = []
    for message in reversed(messages):
        if isinstance(message, AIMessage) and not message.tool_calls:
            break
        if isinstance(message, HumanMessage) and isinstance(message.content, str):
            users.insert(0, message.content)
    return [MERGED_SEPARATOR.join(users[start:]) for start in range(len(users))]


def turn_message(text: str, turn: Turn, workspace: ThreadWorkspace) -> str:
    """The user message the model sees: the text, then bracketed context lines; in listen
    mode the group's recent chatter first (``Turn.chat_context``)."""
    body = _message_body(text, turn, workspace)
    if not turn.chat_context:
        return body
    return f"{turn.chat_context}\n\n{ADDRESSED_HEADER}\n{body}"


def _message_body(text: str, turn: Turn, workspace: ThreadWorkspace) -> str:
    lines: list[str] = []
    if turn.uploads:
        lines.append("[The user attached files, saved in this conversation's workspace:]")
        for upload in turn.uploads:
            where = _workspace_path(upload.path, workspace)
            lines.append(f"- {where} (name: {upload.name}, {upload.mime}, {upload.size} bytes)")
    lines.extend(f"[Note: {note}]" for note in turn.notes)
    if not lines:
        return text
    return f"{text}\n\n" + "\n".join(lines) if text else "\n".join(lines)


def _workspace_path(path: Path, workspace: ThreadWorkspace) -> str:
    try:
        return path.resolve().relative_to(workspace.root).as_posix()
    except ValueError:
        return f"uploads/{path.name}"


class _TurnRecorder:
    """Turns the graph's ``messages`` and ``updates`` streams into agent events.

    The final text is every assistant message of the turn joined by a blank line, and the
    deltas include those separators, so the deltas always add up to the final text.
    """

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._streamed: list[str] = []
        self._files: dict[str, None] = {}
        self._interrupt: Interrupt | None = None

    def feed(self, mode: str, chunk: Any) -> list[AgentEvent]:
        if mode == "messages":
            message, metadata = chunk
            if metadata.get("langgraph_node") == MODEL_NODE:
                return self._on_token(message)
            return []
        events: list[AgentEvent] = []
        for node, update in chunk.items():
            if node == "__interrupt__":
                self._interrupt = self._interrupt or update[0]
            elif isinstance(update, dict):
                for message in update.get("messages", []):
                    events.extend(self._on_message(message))
        return events

    def _on_token(self, message: Any) -> list[AgentEvent]:
        if not isinstance(message, AIMessageChunk) or not message.text:
            return []
        events: list[AgentEvent] = []
        if not self._streamed and self._parts:
            events.append(TextDelta(text=PART_SEPARATOR))
        self._streamed.append(message.text)
        events.append(TextDelta(text=message.text))
        return events

    def _on_message(self, message: Any) -> list[AgentEvent]:
        if isinstance(message, ToolMessage):
            if message.name == PRESENT_TOOL and isinstance(message.artifact, list):
                self._files.update(dict.fromkeys(str(path) for path in message.artifact))
            return []
        if not isinstance(message, AIMessage):
            return []
        events: list[AgentEvent] = []
        streamed, self._streamed = "".join(self._streamed), []
        text = streamed or message.text
        if text and not streamed:
            if self._parts:
                events.append(TextDelta(text=PART_SEPARATOR))
            events.append(TextDelta(text=text))
        if text:
            self._parts.append(text)
        events.extend(ToolActivity(name=call["name"]) for call in message.tool_calls)
        return events

    def outcome(self, workspace: ThreadWorkspace) -> ClarificationRequest | FinalAnswer:
        if self._interrupt is not None:
            return clarification_from(self._interrupt.value)
        files = tuple(
            PresentedFile(path=workspace.root / name, name=Path(name).name) for name in self._files
        )
        return FinalAnswer(text=PART_SEPARATOR.join(self._parts), files=files)


def clarification_from(value: object) -> ClarificationRequest:
    """Read an ``interrupt`` payload: ``{"question", "options"}`` or any other value."""
    if isinstance(value, dict):
        options = value.get("options") or []
        return ClarificationRequest(
            question=str(value.get("question", "")),
            options=tuple(str(option) for option in options),
        )
    return ClarificationRequest(question=str(value))


def translate_error(exc: BaseException) -> AgentError:
    """A short user-facing reason (design §6); the exception text goes to ``detail`` only."""
    detail = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, openai.APITimeoutError):
        reason = "The model did not answer in time."
    elif isinstance(exc, openai.APIConnectionError):
        reason = "The model endpoint could not be reached."
    elif isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        reason = "The model provider rejected the API key."
    elif isinstance(exc, openai.RateLimitError):
        reason = "The model provider is rate-limiting requests; please try again shortly."
    elif isinstance(exc, openai.APIStatusError) and exc.status_code >= 500:
        reason = f"The model provider had a server error (HTTP {exc.status_code})."
    elif isinstance(exc, openai.APIStatusError):
        reason = f"The model provider refused the request (HTTP {exc.status_code})."
    elif isinstance(exc, GraphRecursionError):
        reason = "The agent took too many steps and was stopped."
    else:
        reason = "The agent failed unexpectedly."
    return AgentError(reason, detail=detail)
