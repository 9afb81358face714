"""HTTP events mode: ``POST {events_path}`` on the daemon's HTTP server (design §14).

Checked here on the daemon loop, without the SDK's synchronous dispatcher:

- with an ``encrypt_key``, the signature ``X-Lark-Signature = sha256(timestamp + nonce + key +
  body)`` is checked on the raw body before anything parses it (401 otherwise), then the body
  ``{"encrypt": …}`` is decrypted with lark-oapi's ``AESCipher``; only Feishu's URL check
  comes unsigned, and nothing else unsigned is taken;
- the JSON may nest at most ``channels.webhook_json.MAX_DEPTH`` levels (400 otherwise, one log
  line, never a traceback);
- the verification token (``header.token``, or ``token`` for the URL check) must match (401);
- ``url_verification`` is answered with its ``challenge``.

The status is the ack: 200 once the event is journaled (or is a duplicate, or is nothing for
the kernel), 503 when the kernel refuses it or intake is closed, so Feishu delivers it again.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from lark_oapi.core.utils import AESCipher  # type: ignore[import-untyped]

from channels.webhook_json import BadBody, json_object

logger = logging.getLogger(__name__)

Json = dict[str, Any]
EventHandler = Callable[[Json], Awaitable[tuple[bool, object]]]
"""Takes the event; ``(acked, answer body)``."""
TIMESTAMP = "X-Lark-Request-Timestamp"
NONCE = "X-Lark-Request-Nonce"
SIGNATURE = "X-Lark-Signature"


class Refused(Exception):
    """The request is not from Feishu (or not for this app)."""


class WebhookReceiver:
    def __init__(self, verification_token: str, encrypt_key: str, handle: EventHandler) -> None:
        self._token = verification_token
        self._key = encrypt_key
        self._handle = handle

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        try:
            signed = self._key != "" and SIGNATURE in request.headers
            if signed:
                self._check_signature(request, body)  # on the raw body, before any parsing
            payload, encrypted = self._open(body)
            if payload.get("type") == "url_verification":
                self._check_token(payload.get("token"))
                return web.json_response({"challenge": payload.get("challenge")})
            _require_signed(signed=signed, needed=encrypted or self._key != "")
            header = payload.get("header")
            fallback = payload.get("token")
            self._check_token(
                header.get("token", fallback) if isinstance(header, dict) else fallback
            )
        except Refused as exc:
            logger.warning("feishu webhook call refused: %s", exc)
            return web.Response(status=401)
        except BadBody as exc:
            logger.warning("feishu webhook call refused: %s", exc)
            return web.Response(status=400)
        try:
            acked, answer = await self._handle(payload)
        except Exception:
            logger.exception("feishu webhook event could not be handed over")
            return web.Response(status=500)
        if not acked:
            return web.Response(status=503, text="not accepted")
        return web.json_response(answer if answer is not None else {"msg": "success"})

    def _open(self, body: bytes) -> tuple[Json, bool]:
        outer = _object(body)
        sealed = outer.get("encrypt")
        if sealed is None:
            return outer, False
        if not self._key:
            raise Refused("an encrypted event, but no encrypt_key is configured")
        try:
            plain = AESCipher(self._key).decrypt_str(str(sealed))
        except (ValueError, UnicodeDecodeError) as exc:
            raise Refused("the event does not decrypt with the encrypt_key") from exc
        return _object(plain.encode()), True

    def _check_signature(self, request: web.Request, body: bytes) -> None:
        timestamp, nonce = request.headers.get(TIMESTAMP, ""), request.headers.get(NONCE, "")
        given = request.headers.get(SIGNATURE, "")
        expected = hashlib.sha256((timestamp + nonce + self._key).encode() + body).hexdigest()
        if not hmac.compare_digest(given.encode(), expected.encode()):
            raise Refused("bad signature")

    def _check_token(self, token: object) -> None:
        if not hmac.compare_digest(str(token or "").encode(), self._token.encode()):
            raise Refused("wrong verification token")


def _require_signed(*, signed: bool, needed: bool) -> None:
    if needed and not signed:
        raise Refused("an unsigned event")


def _object(raw: bytes) -> Json:
    return json_object(raw)
