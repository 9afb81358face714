"""What a failed platform call means for its chat, the same for every send (design §8 Errors).

Adapters classify their exceptions at the boundary (``bot.errors.SendError`` kinds); this is
the one place the kernel turns a classified failure into its effect on pacing: it is counted,
logged, and a ``rate_limited`` failure blocks exactly its chat in the limiter for the wait the
platform named. Outbox rows (``bot.delivery.attempt``) and progress (``bot.delivery.progress``:
the placeholder, streaming edits, typing) both come here, so a 429 on a streaming edit slows
its chat exactly as a 429 on a final does. What happens to the send itself differs: a row is
retried or goes to the dead letters, progress is dropped.
"""

from __future__ import annotations

import logging

from bot.delivery.ratelimit import DestinationKey, RateLimiter
from bot.errors import SendError, SendErrorKind
from bot.metrics import Counters

logger = logging.getLogger(__name__)

PERMANENT = frozenset(
    {SendErrorKind.FORBIDDEN, SendErrorKind.TARGET_NOT_FOUND, SendErrorKind.AUTH_FAILED}
)
"""Failures that say the chat (or the channel) takes nothing now: sending more is pointless."""


class SendFailures:
    """Counts, logs and paces failed sends; shares the daemon's limiter."""

    def __init__(self, limiter: RateLimiter, counters: Counters | None = None) -> None:
        self._limiter = limiter
        self._counters = counters

    def note(
        self, key: DestinationKey, exc: SendError, *, what: str, fallback_wait_s: float
    ) -> float | None:
        """Record a failed send to ``key``; for a rate limit, block the chat and return the
        wait (the platform's ``retry_after``, else ``fallback_wait_s``), otherwise ``None``.

        ``what`` names the send in the log line ("row=12 attempt=3", "progress edit").
        """
        if self._counters is not None:
            self._counters.send_errors.labels(channel=key[0], kind=exc.kind).inc()
        logger.warning(
            "send failed %s channel=%s chat=%s kind=%s: %s", what, key[0], key[2], exc.kind, exc
        )
        if exc.kind is not SendErrorKind.RATE_LIMITED:
            return None
        wait = exc.retry_after if exc.retry_after is not None else fallback_wait_s
        # Every send to this chat waits, also when the failed one (a progress update) is dropped.
        self._limiter.block(key, wait)
        return wait
