"""A channel's webhook routes on a loopback server, for adapter tests in webhook mode."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web

from bot.ops.routes import RouteTable
from tests.fakes.common.server import serve_app


@asynccontextmanager
async def serve_routes(routes: RouteTable) -> AsyncIterator[str]:
    """The adapter's webhook routes on a loopback server; yields its origin."""
    app = web.Application()
    for path, handler in routes.posts:
        app.router.add_post(path, handler)
    async with serve_app(app) as origin:
        yield origin
