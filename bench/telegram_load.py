"""The fake Telegram Bot API and a closed-loop load on it, in a child process (for ``bench/``).

Telegram is remote in production, so the fake does not share the measured process: on a thread
of that process it would compete for the GIL and charge its cost to the bot under test.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import statistics
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from types import TracebackType

from tests.fakes.telegram_api import FakeTelegram


@dataclass(frozen=True, slots=True)
class Measured:
    messages: int
    seconds: float
    latencies_s: tuple[float, ...]

    def summary(self) -> dict[str, float]:
        ordered = sorted(self.latencies_s)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        return {
            "messages_per_s": round(self.messages / self.seconds, 1),
            "p50_ms": round(statistics.median(ordered) * 1000, 2),
            "p99_ms": round(p99 * 1000, 2),
        }


# --------------------------------------------------------------------------- load


def drive(fake: FakeTelegram, chats: list[int], messages: int, tag: str) -> Measured:
    """Closed loop: each chat sends message j+1 once the answer to message j was sent."""
    pattern = re.compile(rf"{tag}(\d+)$")
    pushed: dict[tuple[int, int], float] = {}
    seen = len(fake.calls("sendMessage"))

    def push(chat: int, index: int) -> None:
        pushed[(chat, index)] = time.monotonic()
        fake.push_message(f"{tag}{index}", chat_id=chat, user_id=chat, first_name="Load")

    started = time.monotonic()
    for chat in chats:
        push(chat, 0)
    latencies: list[float] = []
    last = started
    while len(latencies) < len(chats) * messages:
        fake.wait_for_calls("sendMessage", seen + 1, timeout=60)
        fresh = fake.calls("sendMessage")[seen:]
        seen += len(fresh)
        for call in fresh:
            found = pattern.search(call.params.get("text", ""))
            if found is None:
                continue
            chat, index = int(call.params["chat_id"]), int(found.group(1))
            latencies.append(call.at - pushed[(chat, index)])
            last = max(last, call.at)
            if index + 1 < messages:
                push(chat, index + 1)
    return Measured(len(latencies), last - started, tuple(latencies))


@dataclass(frozen=True, slots=True)
class Endpoints:
    token: str
    base_url: str
    base_file_url: str
    api_origin: str


def _serve(conn: Connection, cpu: int | None) -> None:
    """The child process: the fake Bot API, and the load driver on request."""
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    with FakeTelegram() as fake:
        conn.send(Endpoints(fake.token, fake.base_url, fake.base_file_url, fake.api_origin))
        while (request := conn.recv()) is not None:
            conn.send(drive(fake, *request))


class Platform:
    """``with Platform() as platform:`` — the fake Telegram and its load in a child process."""

    def __init__(self, *, cpu: int | None = None) -> None:
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child, cpu), name="fake-telegram")

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
        measured: Measured = self._conn.recv()
        return measured
