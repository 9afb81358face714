"""The webhook receiver, mounted on the daemon's HTTP server (design §14, design §17.1).

Telegram POSTs each update as JSON with ``X-Telegram-Bot-Api-Secret-Token``; a missing or
wrong secret gets 403, as PTB's own webhook server answers. The HTTP status is the ack:
200 once the update is journaled (or is a duplicate, or carries nothing to act on), 503 when
the kernel refuses it or the channel is not taking updates, so Telegram delivers it again.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from channels.webhook_json import BadBody, json_object

logger = logging.getLogger(__name__)

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"  # noqa: S105 - a header name

JsonHandler = Callable[[dict[str, object]], Awaitable[bool | None]]
"""Takes the update's JSON; ``True`` acked, ``False`` refused, ``None`` not a valid update."""


class WebhookReceiver:
    def __init__(self, secret: str, handle: JsonHandler) -> None:
        self._secret = secret.encode()
        self._handle = handle

    async def handle(self, request: web.Request) -> web.Response:
        given = request.headers.get(SECRET_HEADER, "").encode()
        # Fail closed: an empty secret (never configured) matches nothing, not a missing header.
        if not self._secret or not hmac.compare_digest(given, self._secret):
            logger.warning("webhook call with a wrong or missing secret token refused")
            return web.Response(status=403)
        if request.content_type != "application/json":
            return web.Response(status=403)
        data = _json_object(await request.read())
        if data is None:
            return web.Response(status=400)
        try:
            acked = await self._handle(data)
        except Exception:
            logger.exception("webhook update could not be handed over")
            return web.Response(status=500)
        if acked is None:
            return web.Response(status=400)
        return web.Response(status=200 if acked else 503)


def _json_object(body: bytes) -> dict[str, object] | None:
    """The update, parsed only after the secret matched; ``None`` for a malformed or too
    deeply nested body (a 400, never a ``RecursionError``)."""
    try:
        return json_object(body)
    except BadBody as exc:
        logger.warning("webhook update refused: %s", exc)
        return None
