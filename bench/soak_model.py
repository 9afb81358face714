"""The soak's model: an OpenAI-compatible fake whose answer names the messages it answers.

Every user message the soak sends carries a marker ``q<chat>-<n>``; the answer to a turn is
``answer to q3-1, q3-2. end-of-answer`` for the markers in the last user message (merged
messages of one turn give one answer naming all of them). The answer arrives after a delay
derived from the markers (so it is the same on a re-run) and streams in slow pieces, so the
daemon shows a placeholder and edits it while turns are in flight.
"""

from __future__ import annotations

import asyncio
import json
import re
import zlib
from typing import Any

from aiohttp import web
from typing_extensions import override

from tests.fakes.openai_server import FakeOpenAIServer, ReceivedRequest, Reply

MARKER = re.compile(r"q(\d+)-(\d+)")
END = "end-of-answer"


def question(chat: int, index: int) -> str:
    return f"q{chat}-{index} please answer"


def answer_text(user_text: str) -> str:
    markers = [f"q{c}-{n}" for c, n in MARKER.findall(user_text)]
    return f"answer to {', '.join(markers) or 'nothing'}. {END}"


class SoakModel(FakeOpenAIServer):
    """Answers every chat completion from the request itself; nothing is scripted."""

    def __init__(self, *, base_delay_s: float = 0.3, spread_s: float = 0.6) -> None:
        super().__init__(model="soak-model")
        self.base_delay_s = base_delay_s
        self.spread_s = spread_s
        self.chunk_gap_s = 0.12

    @override
    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body: dict[str, Any] = await request.json()
        auth = request.headers.get("Authorization")
        with self._lock:
            self._received.append(ReceivedRequest(path=request.path, body=body, authorization=auth))
            self._lock.notify_all()
        text = answer_text(_last_user_text(body))
        spread = (zlib.crc32(text.encode()) % 100) / 100 * self.spread_s
        reply = Reply(text=text, delay_s=self.base_delay_s + spread, chunk_chars=8)
        return await self._perform(request, body, reply)

    @override
    async def _stream(
        self, request: web.Request, chunks: list[dict[str, Any]]
    ) -> web.StreamResponse:
        """Like the fake's stream, with a pause between pieces: the answer takes ~0.5 s."""
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        try:
            await response.prepare(request)
            for chunk in chunks:
                await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
                await asyncio.sleep(self.chunk_gap_s)
            await response.write(b"data: [DONE]\n\n")
            await response.write_eof()
        except ConnectionResetError:
            pass  # the daemon was killed mid-answer: that is the point of the soak
        return response


def _last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages", [])):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, list):
            return "".join(part.get("text", "") for part in content if isinstance(part, dict))
        return str(content or "")
    return ""
