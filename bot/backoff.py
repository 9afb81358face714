"""Capped exponential backoff with full jitter (aiogram ``BackoffConfig``)."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class Backoff:
    base_s: float = 1.0
    factor: float = 2.0
    cap_s: float = 300.0

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """Delay before retry number ``attempt`` (1-based): uniform in [ceiling/2, ceiling]."""
        ceiling = min(self.cap_s, self.base_s * self.factor ** max(0, attempt - 1))
        draw = (rng or _RNG).random()
        return ceiling / 2 + draw * ceiling / 2


_RNG = random.Random()  # noqa: S311 - jitter, not cryptography
