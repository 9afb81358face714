"""A loopback fake of an OpenAI-compatible chat completions endpoint (design §15).

It runs on its own thread with its own event loop, so a test's loop never serves it and a
blocked test cannot starve it. Tests script replies in order (text, tool calls, HTTP errors,
delays, dropped connections, hangs); with nothing scripted it echoes the last user message.
Every request body is recorded so tests can assert on the history the model saw, and every
reply's reported token usage (``reported_usage``) so tests can sum exactly what the provider
said. A reply's usage is scriptable (``Reply(usage=Usage(...))``, or ``None``: not reported);
by default it is computed from the request and the reply, deterministic and varying.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from aiohttp import web
from typing_extensions import override

from tests.fakes.common import waiting
from tests.fakes.common.server import LoopServer

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "permission_denied",
    404: "not_found_error",
    429: "rate_limit_exceeded",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    id: str = ""


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts as the provider reports them (``usage``, with
    ``prompt_tokens_details.cached_tokens``)."""

    prompt: int
    completion: int
    cached: int = 0


COMPUTED: Final = "computed"
"""A reply's default usage: prompt tokens = characters of the request's message contents // 4
+ 1, completion tokens = characters of the reply's text and tool arguments // 4 + 1, cached 0."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """A successful completion: text, tool calls, or both (text first)."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    delay_s: float = 0.0
    chunk_chars: int = 4
    usage: Usage | Literal["computed"] | None = COMPUTED
    """What the reply reports it used; ``None``: no usage in the reply."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorReply:
    """An HTTP error with an OpenAI-style ``{"error": {...}}`` body."""

    status: int
    message: str = "scripted error"
    code: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Drop:
    """Close the connection without a (complete) response; after N chunks when streaming."""

    after_chunks: int = 0
    delay_s: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class RawReply:
    """Send this body as is (a broken or unusual provider)."""

    body: str
    status: int = 200
    content_type: str = "text/event-stream"
    delay_s: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Hang:
    """Never answer: the request stays open until the server stops."""


Scripted = Reply | ErrorReply | Drop | RawReply | Hang


@dataclass(frozen=True, slots=True, kw_only=True)
class ReceivedRequest:
    path: str
    body: dict[str, Any]
    authorization: str | None

    @property
    def messages(self) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = self.body.get("messages", [])
        return messages


class FakeOpenAIServer(LoopServer):
    """``with FakeOpenAIServer() as fake:`` serves ``fake.base_url`` until the block ends."""

    def __init__(self, *, model: str = "fake-model") -> None:
        super().__init__("fake-openai", label="FakeOpenAIServer")
        self.model = model
        self._script: deque[Scripted] = deque()
        self._received: list[ReceivedRequest] = []
        self._reported: list[Usage | None] = []
        self._lock = threading.Condition()
        self._ids = itertools.count(1)
        self._stopping: asyncio.Event | None = None

    # ------------------------------------------------------------------ lifecycle

    @override
    async def _astart(self) -> None:
        self._stopping = asyncio.Event()
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        await self._listen(app)

    @override
    async def _astop(self) -> None:
        if self._stopping is not None:
            self._stopping.set()
        await self._close()

    # ------------------------------------------------------------------ test API

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def script(self, *replies: Scripted) -> None:
        """Queue replies; each chat completion request consumes the next one."""
        with self._lock:
            self._script.extend(replies)

    @property
    def requests(self) -> list[ReceivedRequest]:
        with self._lock:
            return list(self._received)

    def reported_usage(self) -> list[Usage | None]:
        """The usage each answered ``Reply`` reported, in order; ``None`` where it reported
        none (scripted so, or a stream whose request did not ask for usage)."""
        with self._lock:
            return list(self._reported)

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> list[ReceivedRequest]:
        """Block until ``count`` chat requests arrived (call via ``asyncio.to_thread``)."""
        with self._lock:
            if not waiting.wait_until(self._lock, lambda: len(self._received) >= count, timeout):
                raise TimeoutError(f"expected {count} requests, got {len(self._received)}")
            return list(self._received)

    # ------------------------------------------------------------------ handlers

    async def _models(self, request: web.Request) -> web.Response:
        data = [{"id": self.model, "object": "model", "created": 0, "owned_by": "fake"}]
        return web.json_response({"object": "list", "data": data})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body: dict[str, Any] = await request.json()
        with self._lock:
            self._received.append(
                ReceivedRequest(
                    path=request.path,
                    body=body,
                    authorization=request.headers.get("Authorization"),
                )
            )
            self._lock.notify_all()
            step = self._script.popleft() if self._script else Reply(text=_last_user_text(body))
        return await self._perform(request, body, step)

    async def _perform(
        self, request: web.Request, body: dict[str, Any], step: Scripted
    ) -> web.StreamResponse:
        if isinstance(step, Hang):
            await self._wait_stopping(None)
            return web.json_response(_error_body(503, "server stopping", None), status=503)
        await self._wait_stopping(step.delay_s)
        if isinstance(step, ErrorReply):
            payload = _error_body(step.status, step.message, step.code)
            return web.json_response(payload, status=step.status, headers=dict(step.headers))
        if isinstance(step, Drop):
            return await self._drop(request, body, step)
        if isinstance(step, RawReply):
            return web.Response(text=step.body, status=step.status, content_type=step.content_type)
        usage = _reply_usage(step, body)
        if body.get("stream"):
            asked = bool((body.get("stream_options") or {}).get("include_usage"))
            self._report(usage if asked else None)
            return await self._stream(request, self._chunks(step, usage if asked else None))
        self._report(usage)
        return web.json_response(self._completion(step, usage))

    def _report(self, usage: Usage | None) -> None:
        with self._lock:
            self._reported.append(usage)

    async def _wait_stopping(self, seconds: float | None) -> None:
        """Sleep for a scripted delay, cut short when the server stops."""
        if seconds == 0 or self._stopping is None:
            return
        try:
            await asyncio.wait_for(self._stopping.wait(), timeout=seconds)
        except TimeoutError:
            return

    async def _stream(
        self, request: web.Request, chunks: list[dict[str, Any]]
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for chunk in chunks:
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def _drop(
        self, request: web.Request, body: dict[str, Any], step: Drop
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        if body.get("stream") and step.after_chunks:
            await response.prepare(request)
            partial = self._chunks(Reply(text="partial " * step.after_chunks), None)
            for chunk in partial[: step.after_chunks]:
                await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
        if request.transport is not None:
            request.transport.abort()
        raise asyncio.CancelledError

    # ------------------------------------------------------------------ payloads

    def _envelope(self, kind: str) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-fake{next(self._ids)}",
            "object": kind,
            "created": int(time.time()),
            "model": self.model,
        }

    def _chunks(self, reply: Reply, usage: Usage | None) -> list[dict[str, Any]]:
        base = self._envelope("chat.completion.chunk")
        calls = _numbered_calls(reply.tool_calls)
        deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
        deltas += [{"content": piece} for piece in _pieces(reply.text, reply.chunk_chars)]
        for index, (call_id, call) in enumerate(calls):
            function = {"name": call.name, "arguments": ""}
            head = {"index": index, "id": call_id, "type": "function", "function": function}
            deltas.append({"tool_calls": [head]})
            for piece in _pieces(_arguments(call), 8):
                deltas.append({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        finish = "tool_calls" if calls else "stop"
        choices: list[dict[str, Any]] = [
            {"index": 0, "delta": d, "finish_reason": None} for d in deltas
        ]
        choices.append({"index": 0, "delta": {}, "finish_reason": finish})
        chunks = [{**base, "choices": [choice]} for choice in choices]
        if usage is not None:
            chunks.append({**base, "choices": [], "usage": _usage_body(usage)})
        return chunks

    def _completion(self, reply: Reply, usage: Usage | None) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        calls = _numbered_calls(reply.tool_calls)
        if calls:
            message["tool_calls"] = [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": _arguments(call)},
                }
                for call_id, call in calls
            ]
        finish = "tool_calls" if calls else "stop"
        choice = {"index": 0, "message": message, "finish_reason": finish}
        completion = {**self._envelope("chat.completion"), "choices": [choice]}
        if usage is not None:
            completion["usage"] = _usage_body(usage)
        return completion


def _numbered_calls(calls: tuple[ToolCall, ...]) -> list[tuple[str, ToolCall]]:
    return [(call.id or f"call_fake_{index}", call) for index, call in enumerate(calls)]


def _arguments(call: ToolCall) -> str:
    return call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)


def _pieces(text: str, size: int) -> Iterator[str]:
    for start in range(0, len(text), max(size, 1)):
        yield text[start : start + max(size, 1)]


def _reply_usage(reply: Reply, body: dict[str, Any]) -> Usage | None:
    if reply.usage is None or isinstance(reply.usage, Usage):
        return reply.usage
    prompt = sum(len(_content_text(message.get("content"))) for message in body["messages"])
    written = len(reply.text) + sum(len(_arguments(call)) for call in reply.tool_calls)
    return Usage(prompt // 4 + 1, written // 4 + 1, 0)


def _usage_body(usage: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.prompt,
        "completion_tokens": usage.completion,
        "total_tokens": usage.prompt + usage.completion,
        "prompt_tokens_details": {"cached_tokens": usage.cached},
    }


def _content_text(content: object) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content or "")


def _error_body(status: int, message: str, code: str | None) -> dict[str, Any]:
    kind = _ERROR_TYPES.get(status, "server_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def _last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages", [])):
        if message.get("role") != "user":
            continue
        return _content_text(message.get("content"))
    return ""
