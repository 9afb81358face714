"""What the HTTP server serves, held without the server: the channels' webhook routes and
the mounts of other surfaces.

Kept apart from ``bot/ops/http.py`` so a daemon with ``http.enabled: false`` never imports
aiohttp (its client half builds TLS contexts with the system's CA certificates at import:
about 10 MB and 0.1 s of start-up), which a Telegram daemon that polls never needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from bot.errors import BotError

if TYPE_CHECKING:
    from aiohttp import web

    from bot.ports import WebhookHandler


class ListenError(BotError):
    """The HTTP address cannot be listened on (taken, not this host's): exit status 75."""


class HttpMount(Protocol):
    """Routes of their own on the server (the operator console): added before the catch-all
    webhook route."""

    def mount(self, app: web.Application) -> None: ...


class RouteTable:
    """Webhook routes of the channels, looked up per request.

    A channel restarted from new settings registers its path again and replaces the old
    handler; a channel enabled by a reload adds a path while the server runs.
    """

    def __init__(self) -> None:
        self._handlers: dict[str, WebhookHandler] = {}

    def add_post(self, path: str, handler: WebhookHandler) -> None:
        self._handlers[path] = handler

    @property
    def posts(self) -> list[tuple[str, WebhookHandler]]:
        return list(self._handlers.items())

    def handler(self, path: str) -> WebhookHandler | None:
        return self._handlers.get(path)
