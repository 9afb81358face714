"""The remote agent backend: any LangGraph API server through ``langgraph-sdk`` (design §6).

Threads are created on the server and runs are streamed from it (``messages-tuple`` for tokens,
``updates`` for complete messages and ``__interrupt__``), so the daemon stays a thin bridge and
the agent work runs on the server's workers. An interrupt of LangChain's human-in-the-loop
middleware (in any graph built with it) becomes an ``ApprovalRequest`` and the decisions resume
it with ``command={"resume": {"decisions": [...]}}``; any other interrupt becomes a
``ClarificationRequest`` and the answer resumes it with ``command={"resume": answer}``
(``agent/pauses.py``, ``agent/remote_requests.py``). Decisions for a thread with no request
pending start no run: the turn ends with an empty ``FinalAnswer``, which the kernel does not
send. Each model reply in the ``updates`` stream yields a ``ModelUsage`` from its
``usage_metadata`` (a reply the server streams again, as the middleware does, counts once).

Stopping: the run id is tracked per thread. ``cancel(thread_id)`` cancels the server run, and
so does cancelling (or closing) the task iterating ``run``: the generator then cancels the
server run in a shielded task bounded by ``cancel_timeout_s`` and waits for the server to
confirm, so the thread takes a new run straight away. Runs are started with
``multitask_strategy="interrupt"``: the router serialises turns per conversation, so a run
still active on the thread is a leftover (a crash, a cancel that never arrived) and the new turn
supersedes it. Streams are resumable, so the SDK reconnects after a dropped connection without
losing events; a turn that ends with the run stopped or failed raises ``AgentError``. Runs use
``if_not_exists="create"``: a thread the server lost (an in-memory server restarted) starts
again empty instead of failing every later turn of that conversation.

Files: ``present_files`` names paths on the server's disk. They are delivered only when the
server shares this daemon's ``workspace_dir`` (default ``state_dir``; ``langgraph dev`` on this
machine with ``SWITCHBOARD_STATE_DIR`` pointing at it) and the file exists under
``workspace_dir/threads/<thread>/outputs``; otherwise the final text names them instead.
Uploads are saved locally by the router and named in the user message the same way the embedded
backend does; the server can read them only if it shares ``workspace_dir`` too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path
from typing import cast

import httpx
import langgraph_sdk
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import APIStatusError
from langgraph_sdk.schema import RunCreateMetadata, StreamMode, StreamPart
from typing_extensions import override

from agent.embedded_events import PART_SEPARATOR
from agent.pauses import pause_from
from agent.remote_events import RemoteTurn, local_files, raise_unless_success
from agent.remote_requests import pending_interrupts, run_request, thread_state
from bot.config.settings import Settings
from bot.errors import AgentError
from bot.lifecycle import StartClose
from bot.ports import AgentEvent, ClarificationRequest, FinalAnswer, PresentedFile, TextDelta, Turn
from bot.ports.agent import ApprovalRequest
from bot.text.redact import redact_url, redact_urls
from bot.workspace import PathEscape, ThreadWorkspace

logger = logging.getLogger(__name__)

STREAM_MODES: list[StreamMode] = ["messages-tuple", "updates"]
CANCEL_TIMEOUT_S = 5.0
_HTTP_TIMEOUT = httpx.Timeout(connect=5, read=300, write=300, pool=5)
_CONFLICT_OR_GONE = (404, 409)
Pause = ClarificationRequest | ApprovalRequest


class RemoteBackend(StartClose):
    """``AgentBackend`` for a LangGraph API server at ``agent.remote.url``."""

    def __init__(
        self,
        settings: Settings,
        *,
        connect_retries: int = 5,
        cancel_timeout_s: float = CANCEL_TIMEOUT_S,
    ) -> None:
        """``connect_retries`` is how often a refused connection is retried (with backoff, as
        ``langgraph_sdk.get_client`` does); ``cancel_timeout_s`` bounds stopping a run."""
        remote = settings.agent.remote
        self._url = remote.url.rstrip("/")
        self._shown_url = redact_url(self._url)
        """The URL for logs and error texts: without credentials."""
        self._assistant_id = remote.assistant_id
        self._api_key = remote.api_key.get_secret_value() if remote.api_key else None
        self._workspace_dir = settings.workspace_root
        self._connect_retries = connect_retries
        self._cancel_timeout_s = cancel_timeout_s
        self._client: LangGraphClient | None = None
        self._runs: dict[str, str] = {}
        self._stopping: set[asyncio.Task[None]] = set()

    @property
    def description(self) -> str:
        return f"remote LangGraph server at {self._shown_url} (assistant {self._assistant_id})"

    @override
    async def start(self) -> None:
        """Open the HTTP client and check that the server answers and knows the assistant."""
        self._client = self._new_client()
        try:
            await self._check_assistant(self._client)
        except httpx.HTTPError as exc:
            raise self._http_error(exc, doing="reach") from exc
        logger.info("agent backend started: %s", self.description)

    def _new_client(self) -> LangGraphClient:
        """What ``get_client(url=..., api_key=...)`` builds, with our connect retries.

        The key is passed explicitly (never read from ``LANGSMITH_API_KEY`` and friends), so a
        tracing key in the environment is not sent to an unrelated server.
        """
        headers = {"User-Agent": f"langgraph-sdk-py/{langgraph_sdk.__version__}"}
        if self._api_key:
            headers["x-api-key"] = self._api_key
        http = httpx.AsyncClient(
            base_url=self._url,
            transport=httpx.AsyncHTTPTransport(retries=self._connect_retries),
            timeout=_HTTP_TIMEOUT,
            headers=headers,
        )
        return LangGraphClient(http)

    async def _check_assistant(self, client: LangGraphClient) -> None:
        if not await self._assistant_exists(client):
            raise AgentError(
                f"The agent server at {self._shown_url} has no assistant or graph "
                f"{self._assistant_id!r}.",
                detail="assistants.get and assistants.search found nothing",
            )

    async def _assistant_exists(self, client: LangGraphClient) -> bool:
        """``assistant_id`` is an assistant's UUID or a graph name (whose default assistant
        the server runs); either way it must exist."""
        try:
            if _is_uuid(self._assistant_id):
                await client.assistants.get(self._assistant_id)
                return True
            return bool(await client.assistants.search(graph_id=self._assistant_id, limit=1))
        except APIStatusError as exc:
            if exc.status_code not in (404, 422):
                raise
            return False

    @override
    async def aclose(self) -> None:
        client, self._client = self._client, None
        pending = list(self._stopping)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        if client is not None:
            await client.aclose()

    async def probe(self) -> str:
        """``switchboard check --online``: the server answers and knows the assistant."""
        await self.start()
        return f"{self._shown_url} answers; assistant {self._assistant_id} found"

    def warm(self) -> None:
        """Nothing to load: the server runs the graph."""

    async def ready(self) -> None:
        """Ready once started (the server answers for itself)."""

    async def create_thread(self) -> str:
        client = self._require_client()
        try:
            thread = await client.threads.create(metadata={"created_by": "switchboard"})
        except httpx.HTTPError as exc:
            raise self._http_error(exc, doing="create a conversation on") from exc
        return str(thread["thread_id"])

    async def cancel(self, thread_id: str) -> None:
        """Cancel the thread's active server run, if any; best effort (failures are logged,
        because the caller is already giving up on the run)."""
        run_id = self._runs.get(thread_id)
        if run_id is None or self._client is None:
            logger.debug("no active run to cancel on thread %s", thread_id)
            return
        await self._stop_run(self._client, thread_id, run_id)

    async def run(self, thread_id: str, turn: Turn) -> AsyncIterator[AgentEvent]:
        client = self._require_client()
        recorder = RemoteTurn(fallback_model=self._assistant_id)

        def track(meta: RunCreateMetadata) -> None:
            recorder.run_id = recorder.run_id or str(meta["run_id"])
            self._runs[thread_id] = recorder.run_id

        try:
            request = await run_request(client, thread_id, turn, self._workspace(thread_id))
            recorder.known(request.known_messages)
            if not request.runs:
                yield recorder.final()
                return
            stream = client.runs.stream(
                thread_id,
                self._assistant_id,
                input=request.input,
                command=request.command,
                stream_mode=STREAM_MODES,
                stream_resumable=True,
                multitask_strategy="interrupt",
                if_not_exists="create",
                on_run_created=track,
            )
            async with contextlib.aclosing(cast(AsyncGenerator[StreamPart, None], stream)):
                async for part in stream:
                    if part.event == "metadata" and recorder.run_id is None:
                        track(cast(RunCreateMetadata, part.data))
                    for event in recorder.feed(part.event, part.data):
                        yield event
            outcome = await self._settle(client, thread_id, recorder)
        except (asyncio.CancelledError, GeneratorExit):
            if recorder.run_id is not None:
                await self._stop_shielded(client, thread_id, recorder.run_id)
            raise
        except httpx.HTTPError as exc:
            raise self._http_error(exc, doing="run the agent on") from exc
        finally:
            if recorder.run_id is not None and self._runs.get(thread_id) == recorder.run_id:
                del self._runs[thread_id]
        for event in await self._present(thread_id, outcome, recorder):
            yield event

    def _require_client(self) -> LangGraphClient:
        if self._client is None:
            raise AgentError("The agent is not running.", detail="RemoteBackend not started")
        return self._client

    async def _settle(
        self, client: LangGraphClient, thread_id: str, recorder: RemoteTurn
    ) -> Pause | FinalAnswer:
        """How the run ended. A stream that closes with the agent mid-loop (no final assistant
        message) is checked on the server: a pause the stream did not show, or a stop."""
        if recorder.interrupt is not None:
            return pause_from(recorder.interrupt)
        if recorder.completed:
            return recorder.final()
        if recorder.run_id is not None:
            run = await client.runs.get(thread_id, recorder.run_id)
            raise_unless_success(str(run["status"]))
        pending = pending_interrupts(await thread_state(client, thread_id))
        if pending:
            return pause_from(pending[0].get("value"))
        return recorder.final()

    async def _present(
        self, thread_id: str, outcome: Pause | FinalAnswer, recorder: RemoteTurn
    ) -> list[AgentEvent]:
        """The closing events: the outcome, with presented files resolved locally."""
        if not isinstance(outcome, FinalAnswer) or not recorder.files:
            return [outcome]
        workspace = self._workspace(thread_id)
        local = await asyncio.to_thread(local_files, workspace, recorder.files)
        delivered = {name for name, _ in local}
        elsewhere = [name for name in recorder.files if name not in delivered]
        files = tuple(PresentedFile(path=path, name=Path(name).name) for name, path in local)
        if not elsewhere:
            return [FinalAnswer(text=outcome.text, files=files)]
        note = "(Files kept on the agent server, not sent here: " + ", ".join(elsewhere) + ")"
        separator = PART_SEPARATOR if outcome.text else ""
        return [
            TextDelta(text=separator + note),
            FinalAnswer(text=outcome.text + separator + note, files=files),
        ]

    def _workspace(self, thread_id: str) -> ThreadWorkspace:
        try:
            return ThreadWorkspace.for_thread(self._workspace_dir, thread_id)
        except PathEscape as exc:
            raise AgentError(
                "This conversation's thread id is not usable.", detail=str(exc)
            ) from exc

    async def _stop_shielded(self, client: LangGraphClient, thread_id: str, run_id: str) -> None:
        """Stop the server run from a cancelled generator: the request runs in its own task,
        so a second cancellation of ours cannot cut it short; ``aclose`` reaps leftovers."""
        task = asyncio.create_task(
            self._stop_run(client, thread_id, run_id), name=f"agent:remote:cancel:{run_id}"
        )
        self._stopping.add(task)
        task.add_done_callback(self._stopping.discard)
        await asyncio.shield(task)

    async def _stop_run(self, client: LangGraphClient, thread_id: str, run_id: str) -> None:
        """Cancel ``run_id`` and wait (bounded) until the server confirms it stopped."""
        try:
            async with asyncio.timeout(self._cancel_timeout_s):
                await client.runs.cancel(thread_id, run_id, wait=True)
        except TimeoutError:
            logger.warning(
                "run %s on thread %s: no confirmation of the cancel within %.1fs",
                run_id,
                thread_id,
                self._cancel_timeout_s,
            )
        except httpx.HTTPError as exc:
            if _status_of(exc) not in _CONFLICT_OR_GONE:
                logger.warning("run %s on thread %s: cancel failed: %s", run_id, thread_id, exc)
        else:
            logger.info("cancelled run %s on thread %s", run_id, thread_id)

    def _http_error(self, exc: httpx.HTTPError, *, doing: str) -> AgentError:
        """A short reason naming the server (design §6); the exception goes to ``detail``."""
        detail = redact_urls(f"{type(exc).__name__}: {exc}")
        where = f"the agent server at {self._shown_url}"
        if isinstance(exc, httpx.TimeoutException):
            return AgentError(f"Timed out trying to {doing} {where}.", detail=detail)
        status = _status_of(exc)
        if status is None:
            return AgentError(f"Could not {doing} {where}.", detail=detail)
        if status in (401, 403):
            reason = f"{where.capitalize()} rejected the API key (HTTP {status})."
        elif status == 429:
            reason = f"{where.capitalize()} is rate-limiting requests; please try again shortly."
        elif status >= 500:
            reason = f"{where.capitalize()} had a server error (HTTP {status})."
        else:
            reason = f"{where.capitalize()} refused the request (HTTP {status})."
        return AgentError(reason, detail=detail)


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


def _status_of(exc: httpx.HTTPError) -> int | None:
    """The HTTP status of an error response; ``None`` when no response came (the SDK's
    ``APIConnectionError`` is an ``HTTPStatusError`` without one)."""
    response = exc.response if isinstance(exc, httpx.HTTPStatusError) else None
    return response.status_code if isinstance(response, httpx.Response) else None
