"""The soak's Telegram: the strict fake, plus a seeded storm of send failures.

``FakeTelegram.fail_next`` can only refuse a call *before* the platform takes it. A real 5xx (or
a reset connection) can also come *after* Telegram stored the message; the Bot API client then
cannot tell whether it went out. ``StormTelegram`` does both: for each ``sendMessage`` /
``editMessageText`` it draws, with a seeded RNG, one of

- ``rate_limited``: 429 with ``retry_after`` 1 or 2 s, before taking the call;
- ``error_before``: 500/502, before taking the call;
- ``error_after``: the call is handled (the message exists in the chat), then answered 502.

Messages taken by an ``error_after`` call are remembered, so a duplicate they cause can be told
from one the daemon made by itself.
"""

from __future__ import annotations

import json
import random
import threading
from collections import Counter
from dataclasses import dataclass

from aiohttp import web
from typing_extensions import override

from tests.fakes.telegram import FakeTelegram
from tests.fakes.telegram.errors import ApiError
from tests.fakes.telegram.methods import canonical_method

STORMED = frozenset({"sendMessage", "editMessageText"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Storm:
    """Share of stormed calls that fail, and how that share splits between the kinds."""

    rate: float = 0.3
    rate_limited: float = 0.4
    error_before: float = 0.4
    error_after: float = 0.2


class StormTelegram(FakeTelegram):
    def __init__(self, *, seed: int, storm: Storm | None = None) -> None:
        super().__init__()
        self._rng = random.Random(seed)  # noqa: S311 - a seeded storm
        self._storm = storm
        self._storm_lock = threading.Lock()
        self.faults: Counter[str] = Counter()
        self.taken_then_failed: set[tuple[int, int]] = set()  # (chat_id, message_id)

    def set_storm(self, storm: Storm | None) -> None:
        with self._storm_lock:
            self._storm = storm

    def _draw(self, method: str) -> str | None:
        with self._storm_lock:
            storm = self._storm
            if storm is None or method not in STORMED or self._rng.random() >= storm.rate:
                return None
            total = storm.rate_limited + storm.error_before + storm.error_after
            pick = self._rng.random() * total
            if pick < storm.rate_limited:
                return f"rate_limited:{self._rng.choice((1, 2))}"
            if pick < storm.rate_limited + storm.error_before:
                return f"error_before:{self._rng.choice((500, 502))}"
            return "error_after:502"

    @override
    async def _handle_api(self, request: web.Request) -> web.Response:
        method = canonical_method(request.match_info["method"]) or ""
        fault = self._draw(method)
        if fault is None:
            return await super()._handle_api(request)
        kind, value = fault.split(":")
        if kind == "rate_limited":
            error = ApiError(429, f"Too Many Requests: retry after {value}", retry_after=int(value))
            self._count(f"{method}:{kind}")
            return web.json_response(error.body(), status=429)
        if kind == "error_before":
            self._count(f"{method}:{kind}")
            error = ApiError(int(value), "Internal Server Error")
            return web.json_response(error.body(), status=int(value))
        response = await super()._handle_api(request)
        if response.status != 200 or not isinstance(response.body, bytes):
            return response  # the call failed by itself: nothing was taken
        self._count(f"{method}:{kind}")
        result = json.loads(response.body)["result"]
        if isinstance(result, dict) and method == "sendMessage":
            with self._storm_lock:
                self.taken_then_failed.add((int(result["chat"]["id"]), int(result["message_id"])))
        error = ApiError(502, "Bad Gateway")
        return web.json_response(error.body(), status=502)

    def _count(self, name: str) -> None:
        with self._storm_lock:
            self.faults[name] += 1
