"""One send budget per bot across the replicas of a shared store (design §8 "rate limits").

The platforms' bot-wide limits (Telegram's 30 messages a second, the apps' quotas of Feishu and
DingTalk) hold for the bot, not for each process serving it. Replicas share them through the
store: at every heartbeat each reads how many chats every live replica holds and keeps the
part of each bot-wide rate that its chats weigh, a replica holding no chat counting as one
(so its first sends are not stalled, and the parts always add up to the whole). Between two
heartbeats a replica that took chats over sends at its old part: a few seconds of a lower rate,
never more than the bot's. Per-chat paces need no sharing: one replica sends to a chat.
A store that is not shared has one daemon, which keeps the whole budget.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime

from bot.delivery.ratelimit import RateLimiter
from bot.errors import StoreError
from bot.messages import utc_now
from bot.ports import LeaseStore

logger = logging.getLogger(__name__)


def share_of(loads: Mapping[str, int], replica: str) -> float:
    """``replica``'s part of a bot-wide rate, given the chats each live replica holds."""
    weights = {name: max(held, 1) for name, held in loads.items()}
    weights.setdefault(replica, 1)
    return weights[replica] / sum(weights.values())


class SendBudget:
    def __init__(
        self,
        leases: LeaseStore,
        limiter: RateLimiter,
        *,
        replica_id: str,
        expiry_s: Callable[[], float],
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self._leases = leases
        self._limiter = limiter
        self._replica_id = replica_id
        self._expiry_s = expiry_s
        self._clock = clock

    async def refresh(self) -> None:
        """Take this replica's part of the budget as the store sees the replicas now; a store
        that cannot answer leaves the part as it was."""
        if not self._leases.shared:
            return
        try:
            loads = await self._leases.loads(self._clock(), self._expiry_s())
        except StoreError as exc:
            logger.warning("could not read the replicas' loads (%s); the send budget stays", exc)
            return
        share = share_of(loads, self._replica_id)
        if abs(share - self._limiter.share) > 1e-9:
            logger.info(
                "send budget: %.0f%% of the bot-wide rates (%d live replica(s))",
                share * 100,
                len(loads),
            )
        self._limiter.set_share(share)
