"""Telegram's 20 messages per minute per group, which the kernel's limiter cannot express.

The kernel paces every send per chat (``per_chat_interval_s``, ~1/s) and per bot
(``global_rate_per_s``, 30/s) from the adapter's capabilities. Telegram additionally allows a
bot at most 20 new messages a minute in one group; this sliding window enforces that for new
messages (edits and reactions are not counted: streaming edits are already paced at ≥3 s in
groups). A final waits for its slot; a progress message is refused at once so the kernel drops
it instead of delaying the final behind it.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

GROUP_WINDOW_S = 60.0
GROUP_MESSAGES_PER_WINDOW = 20


class GroupWindow:
    def __init__(
        self,
        *,
        limit: int = GROUP_MESSAGES_PER_WINDOW,
        window_s: float = GROUP_WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._limit = limit
        self._window_s = window_s
        self._clock = clock
        self._sent: dict[int, deque[float]] = {}

    def wait_for(self, chat_id: int) -> float:
        """Seconds until ``chat_id`` may take another message (0 for private chats)."""
        if chat_id > 0:
            return 0.0
        sent = self._sent.get(chat_id)
        if sent is None:
            return 0.0
        now = self._clock()
        while sent and sent[0] <= now - self._window_s:
            sent.popleft()
        if not sent:
            del self._sent[chat_id]
            return 0.0
        if len(sent) < self._limit:
            return 0.0
        return sent[0] + self._window_s - now

    def record(self, chat_id: int) -> None:
        if chat_id < 0:
            self._sent.setdefault(chat_id, deque()).append(self._clock())
