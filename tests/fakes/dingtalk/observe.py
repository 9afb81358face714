"""What the bot did, as a test reads it: calls, the stream (deliveries, acks, protocol
errors), sent messages, cards, uploads and tokens.

Accessors return snapshots taken under the fake's lock; waiting is ``common.observe``'s.
"""

from __future__ import annotations

import asyncio
import fnmatch
from collections.abc import Callable
from typing import Any

from tests.fakes.common.observe import Observing
from tests.fakes.dingtalk.gateway import OPEN_PATH
from tests.fakes.dingtalk.records import Ack, Call, CardView, Delivery, Sent, Upload
from tests.fakes.dingtalk.server import DingTalkServer


class Observations(Observing):
    _server: DingTalkServer
    _who = "FakeDingTalk"

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

        def missing() -> str:
            seen = [f"{c.method} {c.path}" for c in self.calls()]
            return f"no matching call to {path}; calls so far: {seen}"

        return self._wait_first(lambda: self.calls(path), predicate, timeout, missing)

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
        return self._wait_first(
            lambda: self.acks,
            lambda a: a.message_id == message_id,
            timeout,
            lambda: f"no ack for message {message_id}",
        )

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
