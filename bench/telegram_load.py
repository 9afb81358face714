"""The fake Telegram Bot API and a closed-loop load on it, in a child process (for ``bench/``).

Telegram is remote in production, so the fake does not share the measured process: on a thread
of that process it would compete for the GIL and charge its cost to the bot under test. So is
the model: with ``model_latency_s`` set, the child also serves a fake OpenAI-compatible model
that echoes the user's message after that many seconds (streamed).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import re
import statistics
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from types import TracebackType
from typing import Any

from aiohttp import web
from typing_extensions import override

from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.fakes.telegram_api import FakeTelegram

ANSWERS = ("sendMessage", "editMessageText")
"""A final answer is a new message or the edit that finishes a streamed placeholder."""


@dataclass(frozen=True, slots=True)
class Measured:
    messages: int
    seconds: float
    latencies_s: tuple[float, ...]
    duplicated: int = 0
    cpu_s: float = 0.0
    """CPU seconds the bot's process used meanwhile (set by the caller, which is that process)."""

    def summary(self) -> dict[str, float]:
        ordered = sorted(self.latencies_s)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        return {
            "messages_per_s": round(self.messages / self.seconds, 1),
            "p50_ms": round(statistics.median(ordered) * 1000, 2),
            "p99_ms": round(p99 * 1000, 2),
            "cpu_ms_per_turn": round(self.cpu_s / max(1, self.messages) * 1000, 2),
            "duplicated": self.duplicated,
        }


# --------------------------------------------------------------------------- load


def drive(fake: FakeTelegram, chats: list[int], messages: int, tag: str) -> Measured:
    """Closed loop: each chat sends message j+1 once the answer to message j was sent.

    The answer is the message (or the final edit of a streamed placeholder) whose text ends
    with the question's marker; progress text ends with a cursor and does not count. An
    answer to a question already answered, or not the one the chat waits for, is a
    duplicate (or out of order) and fails the run; a question not answered within a minute
    is lost and fails it too.
    """
    pattern = re.compile(rf"{tag}(\d+)$")
    pushed: dict[tuple[int, int], float] = {}
    waiting = dict.fromkeys(chats, 0)
    seen = len(fake.calls())

    def push(chat: int, index: int) -> None:
        pushed[(chat, index)] = time.monotonic()
        fake.push_message(f"{tag}{index}", chat_id=chat, user_id=chat, first_name="Load")

    started = time.monotonic()
    for chat in chats:
        push(chat, 0)
    latencies: list[float] = []
    duplicated = 0
    last = started
    while len(latencies) < len(chats) * messages:
        fresh = fake.calls_after(seen, timeout=60)
        if not fresh:
            raise RuntimeError(f"lost: {len(chats) * messages - len(latencies)} unanswered")
        seen += len(fresh)
        for call in fresh:
            if call.method not in ANSWERS:
                continue
            found = pattern.search(call.params.get("text", ""))
            if found is None:
                continue
            chat, index = int(call.params["chat_id"]), int(found.group(1))
            if waiting.get(chat) != index:
                duplicated += 1
                continue
            latencies.append(call.at - pushed[(chat, index)])
            last = max(last, call.at)
            waiting[chat] = index + 1
            if index + 1 < messages:
                push(chat, index + 1)
    if duplicated:
        raise RuntimeError(f"{duplicated} answers duplicated or out of order")
    return Measured(len(latencies), last - started, tuple(latencies), duplicated)


class EchoModel(FakeOpenAIServer):
    """Answers every request with the user's last message after ``latency_s``, streamed in
    a few pieces (so a slow answer shows a placeholder first, as a real model's would)."""

    def __init__(self, latency_s: float) -> None:
        super().__init__(model="bench-model")
        self.latency_s = latency_s

    @override
    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body: dict[str, Any] = await request.json()
        reply = Reply(text=_last_user_text(body), delay_s=self.latency_s, chunk_chars=16)
        return await self._perform(request, body, reply)


def _last_user_text(body: dict[str, Any]) -> str:
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    content = users[-1].get("content", "") if users else ""
    return content if isinstance(content, str) else str(content)


@dataclass(frozen=True, slots=True)
class Endpoints:
    token: str
    base_url: str
    base_file_url: str
    api_origin: str
    model_url: str = ""


def _serve(conn: Connection, cpu: int | None, model_latency_s: float | None) -> None:
    """The child process: the fake Bot API (and model), and the load driver on request."""
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    with contextlib.ExitStack() as stack:
        fake = stack.enter_context(FakeTelegram())
        model_url = ""
        if model_latency_s is not None:
            model_url = stack.enter_context(EchoModel(model_latency_s)).base_url
        conn.send(Endpoints(fake.token, fake.base_url, fake.base_file_url, fake.api_origin,
                            model_url))  # fmt: skip
        while (request := conn.recv()) is not None:
            try:
                conn.send(drive(fake, *request))
            except RuntimeError as exc:
                conn.send(exc)


class Platform:
    """``with Platform() as platform:`` — the fake Telegram and its load in a child process."""

    def __init__(self, *, cpu: int | None = None, model_latency_s: float | None = None) -> None:
        """``model_latency_s``: also serve the echo model (``api.model_url``)."""
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(
            target=_serve, args=(child, cpu, model_latency_s), name="fake-telegram"
        )

        self._endpoints: Endpoints | None = None

    def __enter__(self) -> Platform:
        self._process.start()
        if not self._conn.poll(60):
            raise RuntimeError("the fake Telegram did not start")
        self._endpoints = self._conn.recv()
        return self

    @property
    def api(self) -> Endpoints:
        if self._endpoints is None:
            raise RuntimeError("the fake Telegram is not running")
        return self._endpoints

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._process.is_alive():
            self._conn.send(None)
            self._process.join(timeout=30)
        if self._process.is_alive():
            self._process.kill()

    def drive(self, chats: list[int], messages: int, tag: str) -> Measured:
        self._conn.send((chats, messages, tag))
        measured: Measured | RuntimeError = self._conn.recv()
        if isinstance(measured, RuntimeError):
            raise measured
        return measured
