"""Building the console from the daemon's parts (``bot.app``): only when ``console.enabled``."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.config.settings import Settings
from bot.kernel import Kernel

if TYPE_CHECKING:
    from bot.console.app import Console

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class KernelCounts:
    """``LiveCounts`` of the kernel: its inbound bus and its conversation lanes."""

    kernel: Kernel

    @property
    def queue_depth(self) -> int:
        return self.kernel.conversations.bus.depth

    @property
    def queue_capacity(self) -> int:
        return self.kernel.conversations.bus.capacity

    @property
    def active_runs(self) -> int:
        return self.kernel.conversations.lanes.active_runs

    @property
    def queued_turns(self) -> int:
        return self.kernel.conversations.lanes.queued


def daemon_console(
    settings: Callable[[], Settings], kernel: Kernel, replica_id: str
) -> Console | None:
    current = settings()
    if not current.console.enabled:
        return None
    if not current.http.enabled:
        logger.warning("console.enabled is set but http is disabled: the console is not served")
        return None
    # The console's pages (and Jinja, itsdangerous) load only for a daemon that serves them.
    from bot.console.app import Console  # noqa: PLC0415
    from bot.console.context import ConsoleDeps  # noqa: PLC0415

    deps = ConsoleDeps(
        settings=settings,
        store=kernel.store,
        hub=kernel.hub,
        replica_id=replica_id,
        live=KernelCounts(kernel),
        repoll=kernel.delivery.outbox.repoll,
        approval_metrics=kernel.conversations.approvals.book.metrics,
    )
    host, port = current.http.host, current.http.port
    logger.info("operator console at http://%s:%s/console/", host, port)
    return Console(deps)
