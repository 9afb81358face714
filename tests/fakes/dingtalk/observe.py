"""What the bot did, as a test reads it: calls, the stream (deliveries, acks, protocol
errors), sent messages, cards, uploads and tokens.

Accessors return snapshots taken under the fake's lock. ``wait_*`` block the calling thread;
``await_*`` run those waits in a worker thread so a test's event loop (and an SDK on it)
keeps running.
"""

from __future__ import annotations

import asyncio
import fnmatch
from collections.abc import Callable
from typing import Any

from tests.fakes.dingtalk.gateway import OPEN_PATH
from tests.fakes.dingtalk.records import Ack, Call, CardView, Delivery, Guard, Sent, Upload
from tests.fakes.dingtalk.server import DingTalkServer


class Observations:
    _server: DingTalkServer
    _guard: Guard

    # ------------------------------------------------------------------ waiting

    def wait_until(self, condition: Callable[[], bool], timeout: float = 5.0) -> None:
        """Block until ``condition()`` (evaluated under the fake's lock) holds."""
        cond = self._guard.cond
        with cond:
            if not cond.wait_for(lambda: condition() or self._guard.closed, timeout):
                raise TimeoutError("FakeDingTalk: condition not met in time")
            if not condition():
                raise RuntimeError("FakeDingTalk stopped while waiting")

    async def await_until(
        self,
        condition: Callable[[], bool],
        timeout: float = 5.0,  # noqa: ASYNC109 - the wait runs in a worker thread
    ) -> None:
        await asyncio.to_thread(self.wait_until, condition, timeout)

    # ------------------------------------------------------------------ HTTP calls

    def calls(self, path: str | None = None) -> list[Call]:
        """Every request so far, or those whose path equals (or matches the glob) ``path``."""
        with self._guard:
            return [
                c
                for c in self._server.calls
                if path is None or c.path == path or fnmatch.fnmatchcase(c.path, path)
            ]

    def wait_call(
        self, path: str, predicate: Callable[[Call], bool] | None = None, timeout: float = 5.0
    ) -> Call:
        """The first call to ``path`` (made so far or later) matching ``predicate``."""
        found: list[Call] = []

        def ready() -> bool:
            found[:] = [c for c in self.calls(path) if predicate is None or predicate(c)][:1]
            return bool(found)

        try:
            self.wait_until(ready, timeout)
        except TimeoutError:
            seen = [f"{c.method} {c.path}" for c in self.calls()]
            raise TimeoutError(f"no matching call to {path}; calls so far: {seen}") from None
        return found[0]

    async def await_call(
        self,
        path: str,
        predicate: Callable[[Call], bool] | None = None,
        timeout: float = 5.0,  # noqa: ASYNC109 - the wait runs in a worker thread
    ) -> Call:
        return await asyncio.to_thread(self.wait_call, path, predicate, timeout)

    @property
    def tokens_issued(self) -> list[str]:
        """Every access token handed out (both endpoints), oldest first."""
        with self._guard:
            return list(self._server.world.tokens_issued)

    @property
    def open_requests(self) -> list[dict[str, Any]]:
        """The body of every ``connections/open`` request (refused ones included)."""
        return [c.body for c in self.calls(OPEN_PATH) if isinstance(c.body, dict)]

    # ------------------------------------------------------------------ the stream

    @property
    def connections(self) -> int:
        """Websockets accepted so far (a reconnect counts again)."""
        with self._guard:
            return len(self._server.stream.conns)

    @property
    def live_connections(self) -> int:
        return len(self._server.stream.live())

    def wait_connected(self, count: int = 1, timeout: float = 5.0) -> None:
        """Block until ``count`` sockets were accepted and one is live and usable."""
        stream = self._server.stream
        self.wait_until(lambda: self.connections >= count and stream.target() is not None, timeout)

    async def await_connected(self, count: int = 1, timeout: float = 5.0) -> None:  # noqa: ASYNC109
        await asyncio.to_thread(self.wait_connected, count, timeout)

    @property
    def deliveries(self) -> list[Delivery]:
        with self._guard:
            return list(self._server.stream.deliveries)

    @property
    def acks(self) -> list[Ack]:
        with self._guard:
            return list(self._server.stream.acks)

    @property
    def protocol_errors(self) -> list[str]:
        """Malformed acks, acks for frames not delivered on that socket (or acked twice),
        ping acks that don't echo the data, binary frames. Tests assert it stays empty."""
        with self._guard:
            return list(self._server.stream.protocol_errors)

    def unacked(self) -> list[str]:
        """Message ids delivered that never got any ack."""
        return self._server.stream.unacked()

    def pending(self) -> list[str]:
        """Message ids queued for a (suitable) live socket."""
        with self._guard:
            return [item.message_id for item in self._server.stream.outbox]

    def wait_ack(self, message_id: str, timeout: float = 5.0) -> Ack:
        """The first ack of ``message_id`` (given so far or later)."""
        found: list[Ack] = []

        def ready() -> bool:
            found[:] = [a for a in self.acks if a.message_id == message_id][:1]
            return bool(found)

        try:
            self.wait_until(ready, timeout)
        except TimeoutError:
            raise TimeoutError(f"no ack for message {message_id}") from None
        return found[0]

    async def await_ack(self, message_id: str, timeout: float = 5.0) -> Ack:  # noqa: ASYNC109
        return await asyncio.to_thread(self.wait_ack, message_id, timeout)

    # ------------------------------------------------------------------ the organisation

    def sent_messages(self, conversation: str | None = None) -> list[Sent]:
        """Everything the bot sent (session replies, 1:1 and group sends), oldest first."""
        with self._guard:
            return self._server.world.sent_to(conversation)

    @property
    def cards(self) -> dict[str, CardView]:
        """AI card instances by outTrackId."""
        with self._guard:
            return {k: card.view() for k, card in self._server.world.cards.items()}

    @property
    def uploads(self) -> dict[str, Upload]:
        """``/media/upload`` uploads by media_id."""
        with self._guard:
            return dict(self._server.world.uploads)
