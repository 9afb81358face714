"""The HTTP push API on the daemon's server (design §19): ``POST /api/v1/messages`` and
``GET /api/v1/deliveries/{id}``, behind the operator's bearer token.

Off unless ``http.push_api.enabled``. The token is compared in constant time; a request
without it, or with another, gets 401 and ``WWW-Authenticate: Bearer``. Bodies are read up to
``max_body_bytes`` (413 beyond), as JSON or as a ``multipart/form-data`` upload
(``push_form``). A token past ``rate_per_minute`` (after ``rate_burst``) gets 429 with
``Retry-After``. A bad body gets 400 naming each field at fault. An accepted
push answers 202 with its delivery id once it is recorded: what happens after is the
outbox's (and, for ``run_agent``, the pipeline's), and ``GET`` tells.
"""

from __future__ import annotations

import hmac
import json
import logging
import math
import time
from collections.abc import Callable
from typing import Final

from aiohttp import web
from pydantic import ValidationError

from bot.errors import StoreError
from bot.metrics import PushMetrics
from bot.ports import Store
from bot.ports.push import PushProblem, PushReceipt, PushRefused
from bot.push.body import PushRequestBody, checked_key, field_problems
from bot.push.config import PushApiSettings
from bot.push.form import FORM_TYPE, FormProblem, form_body
from bot.push.pusher import Pusher
from bot.push.rate import PushRate
from bot.push.status import DeliveryReport, delivery_report

logger = logging.getLogger(__name__)

MESSAGES_PATH: Final = "/api/v1/messages"
DELIVERY_PATH: Final = "/api/v1/deliveries/{delivery_id}"
READ_CHUNK: Final = 64 * 1024
STATUS_OF: Final = {
    PushProblem.INVALID: 400,
    PushProblem.NOT_FOUND: 404,
    PushProblem.CONFLICT: 409,
    PushProblem.UNAVAILABLE: 503,
}
UNKNOWN_KIND: Final = "unknown"

JsonObject = dict[str, object]


class PushApi:
    def __init__(
        self,
        settings: PushApiSettings,
        pusher: Pusher,
        store: Store,
        metrics: PushMetrics,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._settings = settings
        self._pusher = pusher
        self._store = store
        self._metrics = metrics
        self._rate = PushRate(settings.rate_per_minute, settings.rate_burst, clock)

    def mount(self, app: web.Application) -> None:
        """Add the routes (before any catch-all route of the server)."""
        app.router.add_post(MESSAGES_PATH, self._post)
        app.router.add_get(DELIVERY_PATH, self._get)

    async def _post(self, request: web.Request) -> web.Response:
        parsed = await self._read(request)
        if isinstance(parsed, web.Response):
            return parsed
        body, key = parsed
        kind = "run_agent" if body.run_agent else "file" if body.file else "text"
        try:
            receipt = await self._pusher.push(body.to_request(idempotency_key=key, actor="api"))
        except PushRefused as exc:
            self._metrics.count(kind, str(exc.problem))
            return _error(STATUS_OF[exc.problem], exc.field, exc.message)
        except StoreError as exc:
            logger.warning("push refused: store unavailable: %s", exc)
            self._metrics.count(kind, str(PushProblem.UNAVAILABLE))
            return _error(503, "store", "the store is unavailable; try again")
        self._metrics.count(kind, "repeated" if receipt.repeated else "accepted")
        return _json(202, receipt_json(receipt))

    async def _read(
        self, request: web.Request
    ) -> tuple[PushRequestBody, str | None] | web.Response:
        """The validated body and ``Idempotency-Key``, or the response refusing them."""
        refusal: tuple[str, web.Response]
        if not self._authorised(request):
            refusal = "unauthorized", _unauthorised()
        elif (wait := self._rate.take()) > 0:
            refusal = "rate_limited", self._rate_limited(wait)
        else:
            try:
                body = await self._parsed(request)
                if body is not None:
                    return body, checked_key(request.headers.get("Idempotency-Key"))
                limit = self._settings.max_body_bytes
                refusal = "too_large", _error(413, "body", f"the body is larger than {limit} bytes")
            except ValidationError as exc:
                fields = field_problems(exc)
                refusal = "invalid", _json(400, {"error": "invalid request", "fields": fields})
            except FormProblem as exc:
                refusal = "invalid", _error(400, "body", str(exc))
            except ValueError as exc:
                refusal = "invalid", _error(400, "Idempotency-Key", str(exc))
        self._metrics.count(UNKNOWN_KIND, refusal[0])
        return refusal[1]

    async def _parsed(self, request: web.Request) -> PushRequestBody | None:
        """JSON, or a ``multipart/form-data`` upload; ``None`` past ``max_body_bytes``."""
        limit = self._settings.max_body_bytes
        if request.content_type == FORM_TYPE:
            return await form_body(request, limit)
        raw = await _bounded_body(request, limit)
        return None if raw is None else PushRequestBody.model_validate_json(raw)

    def _rate_limited(self, wait: float) -> web.Response:
        settings = self._settings
        message = (
            f"too many pushes: at most {settings.rate_per_minute} a minute after a burst of"
            f" {settings.rate_burst} (http.push_api.rate_per_minute, rate_burst); retry later"
        )
        response = _error(429, "rate", message)
        response.headers["Retry-After"] = str(max(1, math.ceil(wait)))
        return response

    async def _get(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return _unauthorised()
        delivery_id = request.match_info["delivery_id"]
        try:
            report = await delivery_report(self._store, delivery_id)
        except StoreError:
            return _error(503, "store", "the store is unavailable; try again")
        if report is None:
            return _error(404, "delivery_id", f"no delivery {delivery_id}")
        return _json(200, report_json(report))

    def _authorised(self, request: web.Request) -> bool:
        token = self._settings.token
        header = request.headers.get("Authorization", "")
        scheme, _, given = header.partition(" ")
        if token is None or scheme.lower() != "bearer":
            return False
        expected = token.get_secret_value().encode()
        return hmac.compare_digest(given.strip().encode(), expected)


async def _bounded_body(request: web.Request, limit: int) -> bytes | None:
    """The body, or ``None`` past ``limit`` bytes (refused before reading when declared)."""
    if request.content_length is not None and request.content_length > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.content.iter_chunked(READ_CHUNK):
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def receipt_json(receipt: PushReceipt) -> JsonObject:
    body: JsonObject = {
        "delivery_id": receipt.delivery_id,
        "status": str(receipt.status),
        "kind": str(receipt.kind),
        "repeated": receipt.repeated,
    }
    if receipt.note:
        body["note"] = receipt.note
    return body


def report_json(report: DeliveryReport) -> JsonObject:
    run: JsonObject | None = None
    if report.run is not None:
        run = {"status": str(report.run.status), "reason": report.run.reason}
    return {
        "delivery_id": report.delivery_id,
        "kind": str(report.kind),
        "status": str(report.status),
        "error": report.error,
        "channel": report.channel,
        "chat": report.chat_id,
        "topic": report.topic_id,
        "created_at": report.created_at.isoformat(),
        "messages": [
            {
                "row": row.id,
                "state": str(row.state),
                "attempts": row.attempts,
                "last_error": row.last_error,
                "message_ids": list(row.sent_message_ids),
            }
            for row in report.rows
        ],
        "run": run,
    }


def _json(status: int, body: JsonObject) -> web.Response:
    return web.Response(status=status, text=json.dumps(body), content_type="application/json")


def _error(status: int, field: str, message: str) -> web.Response:
    return _json(status, {"error": message, "field": field})


def _unauthorised() -> web.Response:
    response = _error(401, "Authorization", "a valid bearer token is required")
    response.headers["WWW-Authenticate"] = 'Bearer realm="switchboard"'
    return response
