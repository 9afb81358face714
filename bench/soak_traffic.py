"""The soak's users: messages pushed into the fake Telegram on a seeded schedule.

A ``Traffic`` thread runs a timeline: each chat's messages ``q<chat>-<n>`` spaced about
``spacing_s`` apart (seeded jitter, chats interleaved), and, when asked, the redeliveries of
each message. It pushes on schedule whether or not the daemon is up, as users would.
"""

from __future__ import annotations

import heapq
import itertools
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from bench.soak_model import question
from tests.fakes.telegram import FakeTelegram

CONFIRM_POLL_S = 0.25
CONFIRM_TIMEOUT_S = 30.0


class Traffic:
    def __init__(  # noqa: PLR0913 - the knobs of a load
        self,
        fake: FakeTelegram,
        chats: list[int],
        per_chat: int,
        spacing_s: float,
        rng: random.Random,
        *,
        redeliver: bool = False,
    ) -> None:
        self.fake = fake
        self.redeliver = redeliver
        self.sent: dict[int, list[int]] = {chat: [] for chat in chats}
        self.updates: dict[tuple[int, int], dict[str, Any]] = {}
        self.deliveries: dict[str, int] = {"pushed": 0, "new_update_id": 0, "redelivered": 0}
        self.last_update_id = 0
        self.unconfirmed: list[str] = []  # redeliveries dropped: the update stayed unconfirmed
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._seq = itertools.count()
        self._timeline: list[tuple[float, int, Callable[[], None]]] = []
        self.window_s = 0.0
        for chat in chats:
            at = rng.uniform(0, spacing_s)
            for index in range(1, per_chat + 1):
                self._at(at, self._pusher(chat, index))
                self.window_s = max(self.window_s, at)
                at += spacing_s * rng.uniform(0.6, 1.4)
        self._thread = threading.Thread(target=self._run, name="soak-traffic", daemon=True)
        self._t0 = 0.0

    def start(self) -> None:
        self._t0 = time.monotonic()
        self._thread.start()

    @property
    def started_at(self) -> float:
        return self._t0

    def done(self) -> bool:
        return not self._thread.is_alive()

    def join(self, timeout_s: float) -> bool:
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)

    def pushed(self) -> dict[int, list[int]]:
        with self._lock:
            return {chat: list(indices) for chat, indices in self.sent.items()}

    def message_ids(self) -> dict[tuple[int, int], int]:
        """(chat, index) -> the user's message id."""
        with self._lock:
            return {key: int(u["message"]["message_id"]) for key, u in self.updates.items()}

    # ------------------------------------------------------------------ timeline

    def _at(self, offset_s: float, action: Callable[[], None]) -> None:
        with self._lock:
            heapq.heappush(self._timeline, (offset_s, next(self._seq), action))

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                if not self._timeline:
                    return
                offset, _, action = self._timeline[0]
            wait = self._t0 + offset - time.monotonic()
            if wait > 0:
                self._stop.wait(min(wait, 0.5))
                continue
            with self._lock:
                heapq.heappop(self._timeline)
            action()

    def _now(self) -> float:
        return time.monotonic() - self._t0

    # ------------------------------------------------------------------ actions

    def _pusher(self, chat: int, index: int) -> Callable[[], None]:
        def push() -> None:
            update = self.fake.push_message(
                question(chat, index), chat_id=chat, user_id=chat, first_name=f"User{chat}"
            )
            with self._lock:
                self.last_update_id = max(self.last_update_id, int(update["update_id"]))
                self.sent[chat].append(index)
                self.updates[(chat, index)] = update
                self.deliveries["pushed"] += 1
            if self.redeliver:
                now = self._now()
                self._at(now + 0.3, self._copy_with_new_id(update))
                self._at(now + 1.0, self._redeliverer(update, now + 1.0 + CONFIRM_TIMEOUT_S))

        return push

    def _copy_with_new_id(self, update: dict[str, Any]) -> Callable[[], None]:
        """The same message (chat, message_id) under a fresh ``update_id``."""

        def push() -> None:
            update_id = self.fake.push_update({"message": update["message"]})
            with self._lock:
                self.last_update_id = max(self.last_update_id, update_id)
                self.deliveries["new_update_id"] += 1

        return push

    def _redeliverer(self, update: dict[str, Any], give_up_at: float) -> Callable[[], None]:
        """The same ``update_id`` once more, once the bot confirmed it (before that, the fake
        still holds it as pending, and a redelivery would be a no-op)."""
        update_id = int(update["update_id"])

        def redeliver() -> None:
            if confirmed(self.fake, update_id):
                self.fake.redeliver(update_id)
                with self._lock:
                    self.deliveries["redelivered"] += 1
            elif self._now() < give_up_at:
                self._at(self._now() + CONFIRM_POLL_S, redeliver)
            else:
                with self._lock:
                    self.unconfirmed.append(f"update {update_id}")

        return redeliver

    def all_confirmed(self) -> bool:
        """The bot confirmed every update pushed so far."""
        with self._lock:
            last = self.last_update_id
        return last == 0 or confirmed(self.fake, last)

    def redeliver_all(self) -> int:
        """Every original update once more (e.g. after a restart, when memory is gone)."""
        with self._lock:
            ids = [int(u["update_id"]) for u in self.updates.values()]
        for update_id in ids:
            self.fake.redeliver(update_id)
        with self._lock:
            self.deliveries["redelivered"] += len(ids)
        return len(ids)


def confirmed(fake: FakeTelegram, update_id: int) -> bool:
    """A getUpdates with an offset above ``update_id`` confirmed it."""
    for call in reversed(fake.calls("getUpdates")):
        offset = call.params.get("offset")
        if offset and int(offset) > update_id:
            return True
    return False
