"""The delivery part of the kernel: the outbox with the pacing, the metrics and the fence every
send goes through (design §8, §11), built once and handed whole to those that send."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bot.config.settings import Settings
from bot.delivery.attempt import RetryPolicy
from bot.delivery.outbox import Outbox
from bot.delivery.ratelimit import RateLimiter
from bot.fleet.fence import ChatFence
from bot.hub import ChannelHub
from bot.metrics import Counters
from bot.ports import Store


@dataclass(frozen=True, slots=True, kw_only=True)
class Delivery:
    outbox: Outbox
    limiter: RateLimiter
    """Per-destination and per-bot pacing, shared by every send kind."""
    counters: Counters
    fence: ChatFence
    """Keeps this replica from acting for chats another took over (design §11 "replicas")."""


def assemble_delivery(
    settings: Callable[[], Settings], store: Store, hub: ChannelHub, *, replica_id: str
) -> Delivery:
    """``replica_id``: this daemon among the store's replicas (the outbox rows it holds)."""
    counters = Counters()
    limiter = RateLimiter()
    fence = ChatFence(store.leases, replica_id, counters.replicas.fenced)
    outbox = Outbox(
        store,
        hub,
        limiter,
        counters,
        RetryPolicy(max_attempts=settings().daemon.outbox_max_attempts),
        holder=replica_id if store.leases.shared else None,
        fence=fence,
    )
    return Delivery(outbox=outbox, limiter=limiter, counters=counters, fence=fence)
