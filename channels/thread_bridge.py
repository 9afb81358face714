"""The daemon loop as seen from an SDK that runs a thread and event loop of its own.

Some SDKs (lark-oapi's long connection) block their thread and call back synchronously on it.
The kernel's ``Publish`` and ``ChannelHealth`` are loop-only, so such an adapter hands its
SDK callbacks this bridge instead:

- ``publish`` / ``publish_many`` run intake on the daemon loop and block the SDK thread until
  the message is journaled (or refused), so the SDK acknowledges only what was recorded. A
  timeout, or a daemon loop that is gone, counts as ``CLOSED``: not acknowledged, so the
  platform delivers the event again later.
- Health reports are marshalled onto the daemon loop; ``failed`` asks the supervisor to restart
  the channel when the SDK's connection died for good.
- ``call`` runs any other coroutine on the daemon loop and waits for its result.

Every method is for the SDK's thread. Called on the daemon loop itself, the blocking ones would
deadlock it, so they refuse.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar

from bot.messages import InboundMessage
from bot.ports import Admission, ChannelHealth, Publish

logger = logging.getLogger(__name__)

T = TypeVar("T")

PUBLISH_TIMEOUT_S = 30.0
"""Journaling one message takes milliseconds; this bounds a daemon that stopped answering."""


class LoopThreadError(RuntimeError):
    """A blocking bridge call was made on the daemon loop's own thread."""


class ThreadBridge:
    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        publish: Publish,
        health: ChannelHealth,
        *,
        publish_timeout_s: float = PUBLISH_TIMEOUT_S,
    ) -> None:
        self._loop = loop
        self._publish = publish
        self._health = health
        self._timeout = publish_timeout_s

    # ------------------------------------------------------------------ intake

    def publish(self, message: InboundMessage) -> Admission:
        """Journal one message; block until it is recorded. Ack the platform only if
        ``admission.ack``."""
        (admission,) = self.publish_many([message])
        return admission

    def publish_many(self, messages: Sequence[InboundMessage]) -> list[Admission]:
        if not messages:
            return []
        try:
            return self.call(self._publish.many(list(messages)), timeout=self._timeout)
        except (TimeoutError, concurrent.futures.CancelledError, RuntimeError) as exc:
            if isinstance(exc, LoopThreadError):
                raise
            logger.warning(
                "intake did not answer (%s); leaving %d event(s) unacknowledged",
                type(exc).__name__,
                len(messages),
            )
            return [Admission.CLOSED] * len(messages)

    def call(self, coroutine: Coroutine[Any, Any, T], *, timeout: float) -> T:
        """Run ``coroutine`` on the daemon loop and wait up to ``timeout`` for its result.

        Raises ``TimeoutError`` (the coroutine is cancelled) or ``RuntimeError`` when the
        daemon loop is closed.
        """
        if self._on_loop_thread():
            coroutine.close()
            raise LoopThreadError("ThreadBridge blocking call made on the daemon loop")
        try:
            future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        except RuntimeError:
            coroutine.close()
            raise
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"the daemon loop did not answer within {timeout:.1f}s") from None

    # ------------------------------------------------------------------ health

    def connected(self) -> None:
        self._soon(self._health.connected)

    def disconnected(self, reason: str) -> None:
        self._soon(self._health.disconnected, reason)

    def auth_failed(self, reason: str) -> None:
        self._soon(self._health.auth_failed, reason)

    def activity(self) -> None:
        self._soon(self._health.activity)

    def failed(self, reason: str) -> None:
        """The SDK's connection died and will not come back: restart the channel."""
        self._soon(self._health.failed, reason)

    def _soon(self, report: Callable[..., None], *args: str) -> None:
        if self._loop.is_closed():
            return  # the daemon is gone; nobody is left to tell
        try:
            self._loop.call_soon_threadsafe(report, *args)
        except RuntimeError:
            return  # closed between the check and the call

    def _on_loop_thread(self) -> bool:
        try:
            return asyncio.get_running_loop() is self._loop
        except RuntimeError:
            return False
