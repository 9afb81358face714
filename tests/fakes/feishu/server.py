"""The HTTP side of the fake: one aiohttp app on 127.0.0.1:0, on its own thread and loop.

Each REST request is decoded, checked against scripted faults, then the bearer token, then
handed to its handler under the fake's lock; the call is recorded (with the code answered)
before the answer goes out. A withheld call (``withhold_answer``) is carried out and recorded,
but its answer never goes out while the fake runs.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections import deque
from typing import Any

from aiohttp import web
from typing_extensions import override

from tests.fakes.common.faults import matches, take
from tests.fakes.common.records import Guard
from tests.fakes.common.server import LoopServer
from tests.fakes.common.wire import Raw, read_multipart
from tests.fakes.feishu import codes
from tests.fakes.feishu.auth import Credentials
from tests.fakes.feishu.cardkit import CardKit
from tests.fakes.feishu.ephemeral import Ephemerals
from tests.fakes.feishu.longconn import LongConn
from tests.fakes.feishu.media import Media
from tests.fakes.feishu.messages import Messages
from tests.fakes.feishu.reactions import Reactions
from tests.fakes.feishu.records import ApiError, Call, Fault, Withhold
from tests.fakes.feishu.wire import ApiRequest, Reply, Route, TopLevel
from tests.fakes.feishu.world import World

_MAX_BODY = 64 * 1024 * 1024
_FILE_FIELDS = frozenset({"image", "file"})
"""Multipart fields that are files even without a filename: the SDK's sync uploads send
``BytesIO`` without one."""


def _targets(route: Route, request: web.Request) -> tuple[str, ...]:
    """What a fault pattern may name: the API (``im.message.create``, globs allowed) or the
    request (``"POST /open-apis/im/v1/messages*"``, or just a path glob)."""
    return (route.name, f"{request.method} {request.path}", request.path)


class FeishuServer(LoopServer):
    def __init__(self, world: World, guard: Guard) -> None:
        super().__init__("fake-feishu", label="FakeFeishu")
        self.world = world
        self.guard = guard
        self.calls: list[Call] = []
        self.faults: deque[Fault] = deque()
        self.withheld: deque[Withhold] = deque()
        self._released: asyncio.Event | None = None
        """Set when the fake stops: withheld answers wait for it (their callers are gone)."""
        self.creds = Credentials(world, lambda: self.origin)
        self.longconn = LongConn(guard, self.creds)
        self.routes: list[Route] = [
            *self.creds.routes(),
            *Messages(world).routes(),
            *Reactions(world).routes(),
            *Media(world).routes(),
            *CardKit(world).routes(),
            *Ephemerals(world).routes(),
        ]

    # ------------------------------------------------------------------ lifecycle (loop)

    @override
    async def _astart(self) -> None:
        self._released = asyncio.Event()
        app = web.Application(client_max_size=_MAX_BODY)
        for route in self.routes:
            app.router.add_route(route.method, route.path, self._endpoint(route))
        app.router.add_get("/ws", self.longconn.handle)
        app.router.add_route("*", "/{tail:.*}", self._unknown)
        await self._listen(app, cancel_handlers=True)
        await self.longconn.start()

    @override
    async def _astop(self) -> None:
        if self._released is not None:
            self._released.set()
        await self.longconn.stop()
        await self._close()

    # ------------------------------------------------------------------ requests (loop)

    def _endpoint(self, route: Route) -> Any:
        async def endpoint(request: web.Request) -> web.StreamResponse:
            return await self._serve(route, request)

        return endpoint

    async def _unknown(self, request: web.Request) -> web.StreamResponse:
        api = await _decode(request, {})
        self._record("unknown", request, api, 404, 404)
        return web.Response(status=404, text="404 page not found")

    async def _serve(self, route: Route, request: web.Request) -> web.StreamResponse:
        params = dict(request.match_info)
        try:
            api = await _decode(request, params)
        except ApiError as error:
            api = ApiRequest(params=params, query=dict(request.query), body=None)
            self._record(route.name, request, api, error.http_status, error.code)
            return _error(error)
        with self.guard:
            try:
                self._gate(route, request)
                reply = route.handler(api)
            except ApiError as error:
                self._record(route.name, request, api, error.http_status, error.code)
                return _error(error)
            self._record(route.name, request, api, 200, 0)
            withheld = self._withheld(route, request, api)
        if withheld and self._released is not None:
            await self._released.wait()  # done, but never answered while the fake runs
        return _success(reply)

    def _withheld(self, route: Route, request: web.Request, api: ApiRequest) -> bool:
        """Whether this call's answer is withheld (the first matching ``Withhold`` is used up)."""
        targets = _targets(route, request)
        hold = take(
            self.withheld,
            lambda h: matches(h.pattern, *targets) and (h.when is None or h.when(api.body)),
        )
        return hold is not None

    def _gate(self, route: Route, request: web.Request) -> None:
        targets = _targets(route, request)
        fault = take(self.faults, lambda f: matches(f.pattern, *targets))
        if fault is not None:
            raise ApiError(
                fault.code, fault.msg, http_status=fault.http_status, headers=fault.headers
            )
        if not route.auth:
            return
        token = _bearer(request)
        if token is None:
            raise ApiError(codes.TOKEN_MISSING, codes.TOKEN_MISSING_MSG)
        if token != self.world.token:
            raise ApiError(codes.TOKEN_INVALID, codes.TOKEN_INVALID_MSG)

    def _record(
        self, name: str, request: web.Request, api: ApiRequest, status: int, code: int
    ) -> None:
        call = Call(
            name=name,
            method=request.method,
            path=request.path,
            query=dict(request.query),
            json=api.body,
            form=dict(api.form),
            files={k: (p.filename, len(p.data)) for k, p in api.files.items()},
            headers=dict(request.headers),
            token=_bearer(request),
            path_params=dict(api.params),
            at=time.monotonic(),
            http_status=status,
            code=code,
        )
        with self.guard:
            self.calls.append(call)


def _bearer(request: web.Request) -> str | None:
    header = request.headers.get("Authorization", "")
    if not header.startswith("Bearer "):
        return None
    return header.removeprefix("Bearer ").strip() or None


async def _decode(request: web.Request, params: dict[str, str]) -> ApiRequest:
    query = dict(request.query)
    if request.content_type == "multipart/form-data":
        form, files = await read_multipart(request, _FILE_FIELDS)
        return ApiRequest(params=params, query=query, body=None, form=form, files=files)
    if request.content_type == "application/x-www-form-urlencoded":
        form = {k: str(v) for k, v in (await request.post()).items()}
        return ApiRequest(params=params, query=query, body=None, form=form)
    raw = await request.read()
    body = None
    if raw:
        try:
            body = json.loads(raw)
        except ValueError:
            raise codes.field_error("body is not JSON") from None
    return ApiRequest(params=params, query=query, body=body)


def _headers() -> dict[str, str]:
    return {"X-Tt-Logid": secrets.token_hex(16)}


def _success(reply: Reply) -> web.StreamResponse:
    if isinstance(reply, Raw):
        headers = {**_headers(), **reply.headers}
        return web.Response(body=reply.body, content_type=reply.content_type, headers=headers)
    if isinstance(reply, TopLevel):
        body: dict[str, Any] = {"code": 0, "msg": reply.msg, **reply.fields}
    else:
        body = {"code": 0, "msg": "success", "data": reply}
    return web.json_response(body, headers=_headers())


def _error(error: ApiError) -> web.StreamResponse:
    body = {"code": error.code, "msg": error.msg, "error": {"log_id": secrets.token_hex(16)}}
    headers = {**_headers(), **error.headers}
    return web.json_response(body, status=error.http_status, headers=headers)
