"""The HTTP side of the fake: one aiohttp app on 127.0.0.1:0, on its own thread and loop.

A request is matched against the scripted faults first (the first matching fault is used up
and answered as scripted), then decoded, then its token checked (OpenAPI: header
``x-acs-dingtalk-access-token`` → 401 ``InvalidAuthentication``; oapi: ``?access_token=`` →
HTTP 200 errcode 40014), then handed to its handler under the fake's lock. Every request,
websocket upgrades and unknown paths included, is recorded as a ``Call`` with its answer
before the answer goes out.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from aiohttp import web
from typing_extensions import override

from tests.fakes.common.faults import matches, take
from tests.fakes.common.records import Guard
from tests.fakes.common.server import LoopServer
from tests.fakes.common.wire import Raw
from tests.fakes.dingtalk import codes
from tests.fakes.dingtalk.auth import Auth
from tests.fakes.dingtalk.cards import Cards
from tests.fakes.dingtalk.gateway import CONNECT_PATH, Gateway
from tests.fakes.dingtalk.media import Media
from tests.fakes.dingtalk.records import ApiError, Call, Fault
from tests.fakes.dingtalk.robot import Robot
from tests.fakes.dingtalk.session import SessionWebhook
from tests.fakes.dingtalk.stream import Stream
from tests.fakes.dingtalk.wire import TOKEN_HEADER, ApiRequest, Reply, Route, decode, token_of
from tests.fakes.dingtalk.world import World

_MAX_BODY = 64 * 1024 * 1024


class DingTalkServer(LoopServer):
    def __init__(self, world: World, guard: Guard) -> None:
        super().__init__("fake-dingtalk", label="FakeDingTalk")
        self.world = world
        self.guard = guard
        self.calls: list[Call] = []
        self.faults: deque[Fault] = deque()
        self.gateway = Gateway(world, lambda: self.origin)
        self.stream = Stream(guard, world)
        self.routes: list[Route] = [
            *self.gateway.routes(),
            *Auth(world).routes(),
            *Robot(world).routes(),
            *Media(world, lambda: self.origin).routes(),
            *SessionWebhook(world).routes(),
            *Cards(world).routes(),
        ]

    # ------------------------------------------------------------------ lifecycle (loop)

    @override
    async def _astart(self) -> None:
        app = web.Application(client_max_size=_MAX_BODY)
        for route in self.routes:
            app.router.add_route(route.method, route.path, self._endpoint(route))
        app.router.add_get(CONNECT_PATH, self._connect)
        app.router.add_route("*", "/{tail:.*}", self._unknown)
        await self._listen(app, cancel_handlers=True)
        await self.stream.start()

    @override
    async def _astop(self) -> None:
        await self.stream.stop()
        await self._close()

    # ------------------------------------------------------------------ requests (loop)

    def _endpoint(self, route: Route) -> Any:
        async def endpoint(request: web.Request) -> web.StreamResponse:
            return await self._serve(route, request)

        return endpoint

    async def _serve(self, route: Route, request: web.Request) -> web.StreamResponse:
        with self.guard:
            fault = self._take_fault(request)
        try:
            api: ApiRequest | None = await decode(request, route)
        except ApiError as error:
            if fault is None:
                return self._fail(request, None, error)
            api = None
        body = api.record() if api is not None else None
        if fault is not None:
            return self._fail(request, body, _faulted(fault))
        assert api is not None
        with self.guard:
            try:
                self._check_token(route, request)
                reply = route.handler(api)
            except ApiError as error:
                return self._fail(request, body, error)
            self._record(request, body, 200, reply if isinstance(reply, dict) else None)
        return _success(reply)

    def _take_fault(self, request: web.Request) -> Fault | None:
        """The first fault whose pattern, a path or path glob (``/v1.0/robot/*``) optionally
        after the method (``"PUT /v1.0/card/*"``), matches; used up."""
        targets = (request.path, f"{request.method} {request.path}")
        return take(self.faults, lambda fault: matches(fault.pattern, *targets))

    def _check_token(self, route: Route, request: web.Request) -> None:
        if route.auth == "header" and not self.world.token_ok(request.headers.get(TOKEN_HEADER)):
            raise codes.unauthenticated()
        if route.auth == "query" and not self.world.token_ok(request.query.get("access_token")):
            raise codes.errcode(codes.OAPI_TOKEN, codes.OAPI_TOKEN_MSG)

    def _fail(
        self, request: web.Request, body: dict[str, Any] | None, error: ApiError
    ) -> web.StreamResponse:
        self._record(request, body, error.http_status, error.body)
        return web.json_response(error.body, status=error.http_status, headers=error.headers)

    async def _unknown(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        if request.path.startswith("/v1.0/"):
            body = codes.openapi_body(codes.API_NOT_FOUND, "Specified api is not found")
            self._record(request, raw or None, 404, body)
            return web.json_response(body, status=404)
        self._record(request, raw or None, 404, None)
        return web.Response(status=404, text="404 page not found")

    async def _connect(self, request: web.Request) -> web.StreamResponse:
        """``GET /connect?ticket=T``: a websocket for a fresh ticket, else 401/403."""
        with self.guard:
            fault = self._take_fault(request)
        if fault is not None:
            return self._fail(request, None, _faulted(fault))
        if not web.WebSocketResponse().can_prepare(request).ok:
            error = codes.bad(codes.INVALID_PARAMETER, "a websocket upgrade is expected")
            return self._fail(request, None, error)
        with self.guard:
            claimed = self.gateway.claim(request.query.get("ticket", ""))
        if isinstance(claimed, int):
            message = "ticket already used" if claimed == 403 else "invalid ticket"
            return self._fail(request, None, codes.openapi(claimed, codes.INVALID_AUTH, message))
        self._record(request, None, 101, None)
        return await self.stream.serve(request, claimed)

    def _record(
        self,
        request: web.Request,
        body: dict[str, Any] | bytes | None,
        status: int,
        answer: Any,
    ) -> None:
        call = Call(
            method=request.method,
            path=request.path,
            query=dict(request.query),
            headers=dict(request.headers),
            body=body,
            status=status,
            answer=answer,
            token=token_of(request),
            at=time.monotonic(),
        )
        with self.guard:
            self.calls.append(call)


def _faulted(fault: Fault) -> ApiError:
    return ApiError(fault.http_status, fault.body, fault.headers)


def _success(reply: Reply) -> web.StreamResponse:
    if isinstance(reply, Raw):
        return web.Response(body=reply.body, content_type=reply.content_type, headers=reply.headers)
    return web.json_response(reply)
