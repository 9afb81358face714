"""Rebalancing chats among live replicas (design §11 "replicas"), run by the ownership loop at
most once per sweep interval: with N live replicas holding C chats between them, the fair share
is ceil(C / N), and no replica should hold more. One that does hands its excess over, at most
``daemon.rebalance_moves`` chats a sweep so that moves are gradual, each to the least loaded
live replica at that moment, and only chats that are idle: no message of the chat unfinished on
any replica (waiting in the journal or on the bus, being routed, queued or running in a lane:
every lane's work is its journal entries, finished only when the turn's reply is in the
outbox), none finished within ``IDLE_QUIET_S`` (a turn's last effect, its done reaction,
follows the mark; a chat in conversation stays where its caches are), no outbox row pending
(waiting or being sent) and no question waiting for its answer. The store decides that, not
this process's lanes: it sees every replica's work, and checks it again in the move itself,
under the lease's row lock, so a chat that has work again by then stays. A move is a direct
transfer guarded by the current owner (never a release, which the replica receiving every
message would claim straight back) and wakes the new holder, as a clean stop does; from then on
messages for the chat reach it through the usual hand-off.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Final

from prometheus_client import Counter

from bot.errors import StoreError
from bot.fleet.fence import ChatFence
from bot.messages import utc_now
from bot.ports import LeaseStore
from bot.records import ChatRef

logger = logging.getLogger(__name__)

IDLE_QUIET_S: Final = 2.0
"""A chat whose journal changed this recently is not idle yet."""


class Rebalancer:
    def __init__(  # noqa: PLR0913 - keyword settings of one rebalancing rule
        self,
        leases: LeaseStore,
        *,
        replica_id: str,
        expiry_s: Callable[[], float],
        moves_per_sweep: Callable[[], int],
        moved: Counter,
        fence: ChatFence,
    ) -> None:
        self._leases = leases
        self._fence = fence
        self._replica_id = replica_id
        self._expiry_s = expiry_s
        self._moves_per_sweep = moves_per_sweep
        self._moved = moved
        self._last_at: float | None = None
        self.handed_over = 0
        """Idle chats handed to less loaded replicas (for logs and tests)."""

    async def when_due(self, interval_s: float) -> None:
        """Rebalance unless that was done within ``interval_s`` (wake-ups come with every
        message journaled elsewhere)."""
        now = asyncio.get_running_loop().time()
        if self._last_at is None or now - self._last_at >= interval_s:
            self._last_at = now
            await self.rebalance()

    async def rebalance(self) -> list[ChatRef]:
        """Hand idle chats to less loaded live replicas while this one holds more than its
        fair share; returns the chats handed over."""
        bound = self._moves_per_sweep()
        if bound <= 0 or not self._leases.shared:
            return []
        try:
            return await self._hand_over_excess(bound)
        except StoreError as exc:
            logger.warning("could not rebalance chats (%s); the next sweep tries again", exc)
            return []

    async def _hand_over_excess(self, bound: int) -> list[ChatRef]:
        now, expiry = utc_now(), self._expiry_s()
        loads = await self._leases.loads(now, expiry)
        targets = fair_share_moves(loads, self._replica_id, bound)
        if not targets:
            return []
        chats = await self._leases.idle(self._replica_id, now, IDLE_QUIET_S, len(targets))
        planned: dict[str, list[ChatRef]] = {}
        for chat, to in zip(chats, targets, strict=False):  # fewer idle chats: fewer moves
            planned.setdefault(to, []).append(chat)
        moved: list[ChatRef] = []
        for to, batch in planned.items():
            self._fence.forget(batch)  # handed on, not lost; one not moved is learnt again
            handed = await self._leases.hand_over(
                self._replica_id, to, batch, now=now, expiry_s=expiry, quiet_s=IDLE_QUIET_S
            )
            for chat in handed:
                logger.info(
                    "handed chat %s %s to %s (rebalancing: %d held here, %d live replicas)",
                    chat.channel,
                    chat.chat_id,
                    to,
                    loads[self._replica_id] - len(moved) - 1,
                    len(loads),
                )
                moved.append(chat)
            self.handed_over += len(handed)
            self._moved.inc(len(handed))
        return moved


def fair_share_moves(loads: Mapping[str, int], replica: str, bound: int) -> list[str]:
    """Where ``replica``'s next chats should go, one entry per chat, at most ``bound``:
    while it holds more than ceil(C / N) (``loads``: the chats each of the N live replicas
    holds, C in all), each to the least loaded other replica, which stays within the share."""
    counts = dict(loads)
    if replica not in counts:  # not live itself: nothing to compare with
        return []
    share = -(-sum(counts.values()) // len(counts))
    targets: list[str] = []
    while len(targets) < bound and counts[replica] > share:
        to = min((r for r in counts if r != replica), key=lambda r: (counts[r], r))
        counts[to] += 1
        counts[replica] -= 1
        targets.append(to)
    return targets
