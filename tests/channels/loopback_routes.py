"""A channel's webhook routes on a loopback server, for adapter tests in webhook mode."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web

from bot.ops.http import RouteTable


@asynccontextmanager
async def serve_routes(routes: RouteTable) -> AsyncIterator[str]:
    """The adapter's webhook routes on a loopback server; yields its origin."""
    app = web.Application()
    for path, handler in routes.posts:
        app.router.add_post(path, handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()
