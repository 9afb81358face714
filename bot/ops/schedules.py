"""How a daemon builds its ``schedules`` loop (design §19 "Schedules"): firings go through the
daemon's ``Pusher``, as pushes of the operator do, and are counted in ``/metrics``."""

from __future__ import annotations

import asyncio
import functools

from bot.config.settings import Settings
from bot.metrics import Counters
from bot.ops.kernel_tasks import KernelTasks
from bot.pipeline.proactive import Pusher
from bot.pipeline.schedule_firing import FiringDeps, ScheduleFiring
from bot.ports import Store
from bot.ports.schedules import schedules_of


def daemon_schedules(
    settings: Settings, store: Store, pusher: Pusher, replica_id: str, counters: Counters
) -> ScheduleFiring | None:
    """The loop, or ``None`` when schedules are off or the store keeps none."""
    if not settings.schedules.enabled or schedules_of(store) is None:
        return None
    metrics = counters.pushes.schedules
    return ScheduleFiring(
        FiringDeps(
            store=store, push=pusher.push, replica_id=replica_id, fired=metrics.firings,
            active=metrics.active,
        )
    )  # fmt: skip


def start_proactive_loops(  # noqa: PLR0913 - what the two loops are built from
    tasks: KernelTasks, ready: asyncio.Event, *, settings: Settings, store: Store,
    pusher: Pusher, replica_id: str, counters: Counters,
) -> None:  # fmt: skip
    """The kernel loops ``pushes`` (a daemon alone on its store: a shared store's ``ownership``
    sweep takes what the CLI recorded) and ``schedules``, each started once the daemon is ready."""
    if not store.leases.shared:
        tasks.start("pushes", functools.partial(pusher.pick_up, ready))
    firing = daemon_schedules(settings, store, pusher, replica_id, counters)
    if firing is not None:
        tasks.start("schedules", functools.partial(firing.run, ready))
