"""The real ``dingtalk_stream`` SDK against the fake, for tests that prove the fake.

``pointed_at(origin)`` is PLATFORMS §4's post-import hook: the SDK copies
``DINGTALK_OPENAPI_ENDPOINT`` into ``stream``, ``chatbot`` and ``card_replier`` (and
``DingTalkStreamClient.OPEN_CONNECTION_API``) at import, so those globals are set for the
block and restored after it. The adapter itself uses the environment variable or its own
HTTP client; this is for tests only.

``StreamTask`` runs ``DingTalkStreamClient.start()`` on the running loop. ``start()`` swallows
a ``CancelledError`` (logs it, sleeps 10 s, goes on), so ``stop()`` cancels until the task is
done, then cancels the keepalive and per-frame tasks the client spawned.

``ScriptedBot`` is a chatbot handler written the way an adapter's would be (note the message,
answer fast), with a few scripted misbehaviours to exercise acks and redelivery.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
from collections import Counter
from collections.abc import Iterator
from types import TracebackType
from typing import Any, Self

from dingtalk_stream import AckMessage, ChatbotHandler, ChatbotMessage

_MODULES = ("dingtalk_stream.stream", "dingtalk_stream.chatbot", "dingtalk_stream.card_replier")
_GLOBAL = "DINGTALK_OPENAPI_ENDPOINT"
# The first cancel lands in the socket loop; the SDK closes the socket, logs it and sleeps 10 s,
# where the next cancel ends it. Short rounds keep a test's teardown fast.
_CANCEL_ROUNDS = 50
_CANCEL_WAIT_S = 0.1
_OPEN_PATH = "/v1.0/gateway/connections/open"


@contextlib.contextmanager
def pointed_at(origin: str) -> Iterator[None]:
    modules = [importlib.import_module(name) for name in _MODULES]
    client_class = modules[0].DingTalkStreamClient
    saved = [getattr(m, _GLOBAL) for m in modules], client_class.OPEN_CONNECTION_API
    for module in modules:
        setattr(module, _GLOBAL, origin)
    client_class.OPEN_CONNECTION_API = origin + _OPEN_PATH
    try:
        yield
    finally:
        for module, endpoint in zip(modules, saved[0], strict=True):
            setattr(module, _GLOBAL, endpoint)
        client_class.OPEN_CONNECTION_API = saved[1]


class StreamTask:
    """``async with StreamTask(client):`` runs the client's stream loop for the block."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.task: asyncio.Task[None] | None = None
        self._before: set[asyncio.Task[Any]] = set()

    async def __aenter__(self) -> Self:
        self._before = asyncio.all_tasks()
        self.task = asyncio.create_task(self.client.start(), name="dingtalk-sdk:start")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def stop(self) -> None:
        task = self.task
        if task is None:
            return
        for _ in range(_CANCEL_ROUNDS):
            if task.done():
                break
            task.cancel()
            await asyncio.wait({task}, timeout=_CANCEL_WAIT_S)
        if not task.done():
            raise RuntimeError("DingTalkStreamClient.start() would not stop")
        spawned = [t for t in asyncio.all_tasks() - self._before if _is_sdk_task(t)]
        for leftover in spawned:
            leftover.cancel()
        await asyncio.gather(*spawned, return_exceptions=True)
        self.task = None


def _is_sdk_task(task: asyncio.Task[Any]) -> bool:
    name = getattr(task.get_coro(), "__qualname__", "")
    return isinstance(name, str) and name.startswith("DingTalkStreamClient.")


class ScriptedBot(ChatbotHandler):  # type: ignore[misc]
    """Queues every message it is given and answers 200, except on first sight of a text:
    "boom" raises (the SDK then sends no ack) and "fail" answers 500. "ping me" is answered
    with "pong" through the message's sessionWebhook before the ack."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: asyncio.Queue[Any] = asyncio.Queue()
        self.times: Counter[str] = Counter()  # msgId -> how often it was handled

    async def process(self, callback: Any) -> tuple[int, str]:
        message = ChatbotMessage.from_dict(callback.data)
        self.times[message.message_id] += 1
        self.seen.put_nowait(message)
        text, first = message.text.content.strip(), self.times[message.message_id] == 1
        if text == "boom" and first:
            raise RuntimeError("handler failed")
        if text == "fail" and first:
            return AckMessage.STATUS_SYSTEM_EXCEPTION, "try again"
        if text == "ping me":
            await asyncio.to_thread(self.reply_text, "pong", message)
        return AckMessage.STATUS_OK, "OK"

    async def next(self) -> Any:
        """The next message handled (a ``ChatbotMessage``), within 5 s."""
        async with asyncio.timeout(5.0):
            return await self.seen.get()
