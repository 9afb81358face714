"""The HTTP server cannot be held down (design §13): a request head or body that never
finishes is cut off, connections past ``http.max_connections`` are refused at once, and a
burst of failed accepts is one log line, not one per try."""

from __future__ import annotations

import asyncio
import errno
import logging
from pathlib import Path

import pytest

from tests.bot.harness import Running, http_get, make_settings, running
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import FakeChannel

TOKEN = "push-token-of-the-test"  # noqa: S105 - a test token
HALF_HEAD = b"POST /telegram/webhook HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
GUARD_S = 20.0
"""A bound on how long a test waits for the server to act, never a claim about its speed."""

Conn = tuple[asyncio.StreamReader, asyncio.StreamWriter]


def _port(run: Running) -> int:
    http = run.daemon.http
    assert http is not None
    assert http.port is not None
    return http.port


async def _open(port: int, first: bytes) -> Conn:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(first)
    await writer.drain()
    return reader, writer


async def _closed_by_server(conns: list[Conn]) -> list[bytes]:
    """What each connection got before the server closed it (waits for every EOF)."""
    got = []
    async with asyncio.timeout(GUARD_S):
        for reader, writer in conns:
            got.append(await reader.read())
            writer.close()
    return got


async def test_half_sent_heads_are_closed_and_healthz_still_answers(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, http={"header_timeout_s": 0.5, "max_connections": 64})
    async with running(settings, [FakeChannel()], FakeAgent()) as run:
        held = [await _open(_port(run), HALF_HEAD) for _ in range(40)]
        assert (await http_get(run.daemon, "/healthz"))[0] == 200
        assert await _closed_by_server(held) == [b""] * 40
        assert (await http_get(run.daemon, "/healthz"))[0] == 200


async def test_connections_past_the_bound_are_refused_with_503(tmp_path: Path) -> None:
    """Each held connection has finished one request (so the server counts it) and then
    sends half of the next head; the next connection is over the bound and refused."""
    settings = make_settings(tmp_path, http={"header_timeout_s": 1, "max_connections": 6})
    async with running(settings, [FakeChannel()], FakeAgent()) as run:
        port = _port(run)
        held = []
        for _ in range(6):
            reader, writer = await _open(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            async with asyncio.timeout(GUARD_S):
                head = await reader.readuntil(b"\r\n\r\n")
                assert head.startswith(b"HTTP/1.1 200")
                length = next(
                    int(line.split(b":")[1]) for line in head.lower().split(b"\r\n")
                    if line.startswith(b"content-length:")
                )  # fmt: skip
                await reader.readexactly(length)
            writer.write(HALF_HEAD)
            held.append((reader, writer))
        (refused,) = await _closed_by_server([await _open(port, b"GET /healthz HTTP/1.1\r\n")])
        assert refused.startswith(b"HTTP/1.1 503 ")
        await _closed_by_server(held)
        assert (await http_get(run.daemon, "/healthz"))[0] == 200


async def test_a_body_that_never_finishes_is_cut_off(tmp_path: Path) -> None:
    settings = make_settings(
        tmp_path,
        http={"body_timeout_s": 0.5, "push_api": {"enabled": True, "token": TOKEN}},
    )
    async with running(settings, [FakeChannel()], FakeAgent()) as run:
        head = (
            "POST /api/v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {TOKEN}\r\nContent-Length: 1000\r\n\r\n"
        )
        slow = await _open(_port(run), head.encode() + b'{"text": "')
        (got,) = await _closed_by_server([slow])
        assert b" 500 " not in got
        assert (await http_get(run.daemon, "/healthz"))[0] == 200


async def test_a_burst_of_failed_accepts_is_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """asyncio reports each failed ``accept()`` (out of file descriptors) to the loop's
    exception handler, once per try; the server's handler makes a burst one line."""
    async with running(make_settings(tmp_path), [FakeChannel()], FakeAgent()):
        loop = asyncio.get_running_loop()
        with caplog.at_level(logging.WARNING):
            for _ in range(500):
                loop.call_exception_handler(
                    {
                        "message": "socket.accept() out of system resource",
                        "exception": OSError(errno.EMFILE, "Too many open files"),
                    }
                )
        lines = [r for r in caplog.records if r.name == "bot.ops.http_guard"]
    assert len(lines) == 1, [r.getMessage() for r in lines]
    assert "Too many open files" in lines[0].getMessage()
