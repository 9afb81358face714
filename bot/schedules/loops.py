"""How a daemon builds its ``schedules`` loop (design §19 "Schedules"): firings go through the
push port (the daemon's ``Pusher``), as pushes of the operator do, and are counted in
``/metrics``."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine

from bot.config.settings import Settings
from bot.metrics import Counters
from bot.ports import Store
from bot.ports.push import Push
from bot.ports.schedules import schedules_of
from bot.schedules.firing import FiringDeps, ScheduleFiring


def daemon_schedules(
    settings: Settings, store: Store, push: Push, replica_id: str, counters: Counters
) -> ScheduleFiring | None:
    """The loop, or ``None`` when schedules are off or the store keeps none."""
    if not settings.schedules.enabled or schedules_of(store) is None:
        return None
    metrics = counters.pushes.schedules
    return ScheduleFiring(
        FiringDeps(
            store=store,
            push=push,
            replica_id=replica_id,
            fired=metrics.firings,
            active=metrics.active,
        )
    )


def schedule_loop(
    settings: Settings, store: Store, push: Push, replica_id: str, counters: Counters
) -> Callable[[asyncio.Event], Coroutine[object, object, None]] | None:
    """The kernel loop ``schedules`` (it waits for the daemon to be ready), or ``None`` when
    schedules are off or the store keeps none."""
    firing = daemon_schedules(settings, store, push, replica_id, counters)
    return None if firing is None else firing.run
