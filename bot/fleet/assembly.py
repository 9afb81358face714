"""The fleet part of the kernel (design §11): this replica's chat ownership, the placeholders a
crash left, and how a resumed or lost turn is told; with what the daemon does with them before
intake opens (``prepare``)."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bot.config.settings import Settings
from bot.delivery.assembly import Delivery
from bot.fleet.ownership import ChatOwnership, Spawn
from bot.fleet.rebalance import Rebalancer
from bot.hub import ChannelHub
from bot.pipeline.bus import InboundBus
from bot.pipeline.recovery import LeftPlaceholders, Notify, notice_sender, recover
from bot.pipeline.sessions import Sessions
from bot.ports import Store


@dataclass(frozen=True, slots=True, kw_only=True)
class FleetParts:
    ownership: ChatOwnership
    """The chats this replica serves, on a store several share (design §11 "replicas")."""
    placeholders: LeftPlaceholders
    """Placeholders a crash left pending, finished once their channels run (design §11)."""
    notify: Notify
    """Tells a chat that its turn is resumed or lost after a crash or a takeover."""
    recover: Callable[[], Awaitable[int]]
    """Start-up recovery of the whole journal (a store not shared)."""

    async def prepare(self) -> None:
        """Requeue unfinished work (left placeholders are withdrawn or reserved first)."""
        if self.ownership.shared:
            # Only what no live replica has in hand: the rest is theirs.
            await self.ownership.sweep(fresh_start=True)
            return
        await self.placeholders.collect()
        await self.recover()


def assemble_fleet(  # noqa: PLR0913 - what taking chats over touches
    settings: Callable[[], Settings],
    store: Store,
    hub: ChannelHub,
    delivery: Delivery,
    *,
    bus: InboundBus,
    sessions: Sessions,
    replica_id: str,
    warm: Callable[[], None],
    spawn: Spawn,
) -> FleetParts:
    """``warm``: the agent's, called when turns will run again; ``spawn`` starts a kernel task
    (the recovery of a gone replica's placeholders)."""
    outbox, fence = delivery.outbox, delivery.fence
    placeholders = LeftPlaceholders(store, outbox, hub)
    notify = notice_sender(outbox.submit, sessions, hub.capabilities_of)

    def expiry_s() -> float:
        return settings().daemon.replica_expiry_s

    rebalancer = Rebalancer(
        store.leases,
        replica_id=replica_id,
        expiry_s=expiry_s,
        moves_per_sweep=lambda: settings().daemon.rebalance_moves,
        moved=delivery.counters.replicas.chats_rebalanced,
        fence=fence,
    )
    ownership = ChatOwnership(
        store,
        bus,
        outbox,
        placeholders,
        replica_id=replica_id,
        expiry_s=expiry_s,
        notify=notify,
        submit=outbox.submit,
        warm=warm,
        spawn=spawn,
        rebalancer=rebalancer,
        fence=fence,
    )
    resume = functools.partial(recover, store, bus, notify, outbox.submit, warm=warm)
    return FleetParts(ownership=ownership, placeholders=placeholders, notify=notify, recover=resume)
