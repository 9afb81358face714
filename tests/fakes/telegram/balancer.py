"""A load balancer in front of several webhook receivers, for multi-replica tests.

While it has URLs, each webhook POST (first tries and retries alike) goes to the next URL in
the rotation instead of the one setWebhook registered, so a failed post is retried on the next
replica. Not thread-safe by itself: ``FakeTelegram`` guards it with the world's lock.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Target:
    """Where one webhook post goes; ``balanced`` when the rotation chose it."""

    url: str
    balanced: bool


@dataclass(slots=True)
class Balancer:
    urls: tuple[str, ...] = ()
    accepted: list[tuple[int, str]] = field(default_factory=list)
    _next: int = 0

    def set(self, urls: Sequence[str] | None) -> None:
        """Replaces the rotation (empty or None turns balancing off); it starts at ``urls[0]``."""
        chosen = tuple(urls or ())
        for url in chosen:
            if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
                raise ValueError(f"FakeTelegram: balance URL {url!r} is not an HTTP(S) URL")
        self.urls, self._next = chosen, 0

    def target(self, hook_url: str) -> Target:
        """The next URL in the rotation, or the setWebhook URL when not balancing."""
        if not self.urls:
            return Target(hook_url, balanced=False)
        url = self.urls[self._next]
        self._next = (self._next + 1) % len(self.urls)
        return Target(url, balanced=True)

    def done(self, update_id: int, target: Target, status: int) -> None:
        if target.balanced and 200 <= status < 300:
            self.accepted.append((update_id, target.url))
