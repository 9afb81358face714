"""The daemon's HTTP server assembled around the kernel: health, readiness, metrics, channel
webhooks, the push API and mounts such as the operator console (design §13, §19, §23).

Built only when ``http.enabled``: with HTTP off neither this server nor aiohttp is loaded
(``bot/ops/routes.py`` holds what channels register meanwhile).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from bot.config.settings import Settings
from bot.kernel import Kernel
from bot.kernel.options import MountFactory
from bot.ops.readiness import Readiness
from bot.ops.routes import RouteTable
from bot.records import Replica

if TYPE_CHECKING:
    from bot.ops.http import HttpServer

logger = logging.getLogger(__name__)


async def serve_http(  # noqa: PLR0913 - what the server reports on and what it serves
    current: Callable[[], Settings],
    kernel: Kernel,
    readiness: Readiness,
    replica: Replica,
    *,
    routes: RouteTable,
    mounts: Sequence[MountFactory],
) -> HttpServer | None:
    """The started server, or ``None`` with ``http.enabled: false``; the caller closes it."""
    settings = current().http
    if not settings.enabled:
        if routes.posts:
            logger.warning("http is disabled, so channel webhooks cannot receive anything")
        return None
    from bot.ops.http import HttpServer  # noqa: PLC0415 - aiohttp loads where it serves

    push = None
    if settings.push_api.enabled:  # its modules load only when it is served
        from bot.push.api import PushApi  # noqa: PLC0415

        pushes = kernel.delivery.counters.pushes
        push = PushApi(settings.push_api, kernel.pusher, kernel.store, pushes)
    built = [mount(current, kernel, replica.id) for mount in mounts]
    server = HttpServer(
        settings,
        readiness,
        kernel.delivery.counters,
        routes,
        replica,
        push=push,
        mounts=[mount for mount in built if mount is not None],
    )
    await server.start()
    return server
