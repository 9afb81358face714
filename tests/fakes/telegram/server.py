"""FakeTelegram: a loopback Bot API server, strict like the real one for what Switchboard uses.

It runs an aiohttp server on 127.0.0.1:0 in its own thread with its own event loop, so neither
the adapter's loop nor a blocked test can starve it. All state sits in one ``World`` behind one
lock; every request is recorded before it is answered. See ``tests/fakes/telegram/__init__.py``
for the wire rules it enforces.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Mapping
from typing import Any

import aiohttp
from aiohttp import web
from typing_extensions import override

from tests.fakes.common.server import LoopServer
from tests.fakes.telegram.balancer import Balancer
from tests.fakes.telegram.errors import ApiError, bad_request
from tests.fakes.telegram.methods import ApiRequest, BotApi, canonical_method
from tests.fakes.telegram.recording import Call, CallLog, Injections
from tests.fakes.telegram.world import Json, World

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"  # noqa: S105 - a header name
DOWNLOAD = "downloadFile"  # the method name file downloads are recorded (and faulted) under
_MAX_BODY = 51 * 1024 * 1024
_FORMS = ("application/x-www-form-urlencoded", "multipart/form-data")
_SUPERSEDED = (
    "Conflict: terminated by other getUpdates request; make sure that only one bot instance "
    "is running"
)


class FakeTelegramServer(LoopServer):
    """The HTTP side: lifecycle, request decoding, long polls and webhook delivery."""

    webhook_retry_s = 0.2
    webhook_max_attempts = 3
    webhook_balanced_max_attempts = 600  # behind the balancer an update moves to a live replica

    def __init__(self, *, token: str, bot_id: int, bot_username: str) -> None:
        super().__init__("fake-telegram", label="FakeTelegram")
        self.token = token
        self.bot_id = bot_id
        self.bot_username = bot_username
        bot_user = {"id": bot_id, "is_bot": True, "first_name": "FakeBot", "username": bot_username}
        self._cond = threading.Condition()
        self._world = World(bot_user=bot_user)
        self._api = BotApi(self._world)
        self._log = CallLog(self._cond)
        self._injections = Injections()
        self._balancer = Balancer()
        self._token_valid = True
        self._poll_seq = 0
        self._session: aiohttp.ClientSession | None = None
        self._worker: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._changed = asyncio.Event()

    # ------------------------------------------------------------------ lifecycle

    @override
    async def _astart(self) -> None:
        self._stopping, self._changed = asyncio.Event(), asyncio.Event()
        app = web.Application(client_max_size=_MAX_BODY)
        app.router.add_route("*", "/bot{token}/{method}", self._handle_api)
        app.router.add_get("/file/bot{token}/{path:.+}", self._handle_download)
        await self._listen(app, cancel_handlers=True)
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10))
        self._worker = asyncio.create_task(self._deliver_webhooks(), name="fake-telegram:webhook")

    @override
    async def _astop(self) -> None:
        """Answers pending long polls at once, then shuts the server down."""
        self._stopping.set()
        self._wake()
        if self._worker is not None:
            self._worker.cancel()  # it may be mid-delivery to a receiver that hangs
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
        if self._session is not None:
            await self._session.close()
        await self._close()

    @property
    def api_origin(self) -> str:
        return self.origin

    @property
    def base_url(self) -> str:
        return f"{self.api_origin}/bot"

    @property
    def base_file_url(self) -> str:
        return f"{self.api_origin}/file/bot"

    # ------------------------------------------------------------------ waking waiters

    def _wake(self) -> None:
        """Runs on the server loop: releases every coroutine waiting for a state change."""
        self._changed.set()
        self._changed = asyncio.Event()

    def _poke(self) -> None:
        """Thread-safe: tell the server loop that the world changed."""
        loop = self._thread.loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop already closed
                loop.call_soon_threadsafe(self._wake)

    async def _pause(self, seconds: float | None, event: asyncio.Event | None = None) -> None:
        """Waits ``seconds`` (or for ``event``), cut short when the server stops."""
        waiter = event if event is not None else self._stopping
        if not self._stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(waiter.wait(), timeout=seconds)

    # ------------------------------------------------------------------ Bot API requests

    async def _handle_api(self, request: web.Request) -> web.Response:
        """Records each request before answering it; an admitted call is recorded under the
        same lock hold as its effect, so a test that sees the call also sees the effect."""
        name = request.match_info["method"]
        decoded, refusal = await _decode(request)
        call = Call(
            method=canonical_method(name) or name,
            params=dict(decoded.params),
            files=dict(decoded.files),
            filenames=dict(decoded.filenames),
            at=time.monotonic(),
        )
        try:
            await self._admit(call, request.match_info["token"], refusal)
            if call.method == "getUpdates":
                return _ok(await self._get_updates(call))
            with self._cond:
                self._log.record(call)
                result = self._api.call(call.method, decoded)
        except ApiError as error:
            return web.json_response(error.body(), status=error.status)
        self._poke()
        return _ok(result)

    async def _admit(self, call: Call, token: str, refusal: ApiError | None) -> None:
        """Access checks, then the scripted delay and fault; refused calls are recorded here."""
        with self._cond:
            refused = self._refusal(token, call.method, refusal)
            delay, fault = (0.0, None) if refused else self._injections.take(call.method)
        if delay:
            await self._pause(delay)
        error = refused or fault
        if error is not None:
            self._log.record(call)
            raise error

    def _refusal(self, token: str, method: str, refusal: ApiError | None) -> ApiError | None:
        """401 for a wrong or revoked token, then 404 for an unknown method, then the body."""
        if token != self.token or not self._token_valid:
            return ApiError(401, "Unauthorized")
        if method != DOWNLOAD and canonical_method(method) is None:
            return ApiError(404, "Not Found")
        return refusal

    async def _get_updates(self, call: Call) -> list[Json]:
        """Long poll: answers as soon as an update is pending, at ``timeout``, or on stop."""
        offset, limit, timeout = _poll_params(call.params)
        with self._cond:
            self._log.record(call)
            self._api.start_poll(call.params, offset)
            self._poll_seq += 1
            mine = self._poll_seq
        self._poke()  # an older poll still waiting learns it was superseded
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            changed = self._changed
            with self._cond:
                if self._poll_seq != mine:
                    raise ApiError(409, _SUPERSEDED)
                batch = self._world.take(limit)
            remaining = deadline - asyncio.get_running_loop().time()
            if batch or remaining <= 0 or self._stopping.is_set():
                return batch
            await self._pause(remaining, changed)

    async def _handle_download(self, request: web.Request) -> web.Response:
        call = Call(
            method=DOWNLOAD, params={"file_path": request.match_info["path"]}, at=time.monotonic()
        )
        try:
            await self._admit(call, request.match_info["token"], None)
            with self._cond:
                self._log.record(call)
                stored = self._world.paths.get(call.params["file_path"])
        except ApiError as error:
            return web.json_response(error.body(), status=error.status)
        if stored is None:
            return web.json_response(ApiError(404, "Not Found").body(), status=404)
        return web.Response(body=stored.content, content_type="application/octet-stream")

    # ------------------------------------------------------------------ webhook delivery

    async def _deliver_webhooks(self) -> None:
        """Posts pending updates one at a time to the webhook (or, while balancing, to the next
        replica in the rotation) while one is set."""
        while not self._stopping.is_set():
            changed = self._changed
            with self._cond:
                hook = self._world.webhook
                update = self._world.next_for_webhook() if hook is not None else None
                target = None
                if hook is not None and update is not None:
                    target = self._balancer.target(hook.url)
            if hook is None or update is None or target is None:
                await self._pause(None, changed)
                continue
            status = await self._post_webhook(target.url, json.dumps(update).encode(), hook.secret)
            with self._cond:
                attempts = self.webhook_max_attempts
                if target.balanced:
                    attempts = self.webhook_balanced_max_attempts
                self._world.webhook_done(update["update_id"], status, max_attempts=attempts)
                self._balancer.done(update["update_id"], target, status)
                self._cond.notify_all()
            if not 200 <= status < 300:
                await self._pause(self.webhook_retry_s)

    async def _post_webhook(self, url: str, body: bytes, secret: str | None) -> int:
        """Delivers like Telegram: exact JSON content type, secret header; 0 = unreachable."""
        assert self._session is not None
        headers = {"Content-Type": "application/json"}
        if secret is not None:
            headers[SECRET_HEADER] = secret
        try:
            async with self._session.post(url, data=body, headers=headers) as response:
                await response.read()
                return response.status
        except (aiohttp.ClientError, TimeoutError):
            return 0

    async def _post_raw_webhook(self, body: bytes, secret: str | None) -> int:
        with self._cond:
            hook = self._world.webhook
            if hook is None:
                raise AssertionError("FakeTelegram: no webhook is set (setWebhook was not called)")
            target = self._balancer.target(hook.url)  # through the balancer while it is set
        return await self._post_webhook(target.url, body, secret)

    def _run(self, coro: Any) -> Any:
        assert self._thread.loop is not None, "FakeTelegram is not running"
        return asyncio.run_coroutine_threadsafe(coro, self._thread.loop)


def _ok(result: object) -> web.Response:
    return web.json_response({"ok": True, "result": result})


def _poll_params(params: Mapping[str, str]) -> tuple[int, int, float]:
    try:
        offset = int(params.get("offset") or 0)
        limit = int(params.get("limit") or 100)
        timeout = float(params.get("timeout") or 0)
    except ValueError:
        raise bad_request("wrong parameter in getUpdates request") from None
    return offset, min(max(limit, 1), 100), max(timeout, 0.0)


async def _decode(request: web.Request) -> tuple[ApiRequest, ApiError | None]:
    """Form fields and uploads; anything python-telegram-bot would not send is refused."""
    if request.method != "POST":
        return ApiRequest({}), bad_request("the fake accepts POST only, as PTB sends")
    if not request.body_exists:
        return ApiRequest({}), None
    if request.content_type not in _FORMS:
        why = f"{request.content_type} body refused: PTB sends form or multipart data only"
        return ApiRequest({}), bad_request(why)
    try:
        form = await request.post()
    except web.HTTPRequestEntityTooLarge:
        return ApiRequest({}), ApiError(413, "Request Entity Too Large")
    params: dict[str, str] = {}
    files: dict[str, bytes] = {}
    names: dict[str, str] = {}
    for key, value in form.items():
        if isinstance(value, web.FileField):
            with value.file:
                files[key] = value.file.read()
            names[key] = value.filename
        else:
            params[key] = value if isinstance(value, str) else bytes(value).decode()
    return ApiRequest(params, files, names), None
