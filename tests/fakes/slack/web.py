"""HTTP side of the fake: the Web API, upload URLs, private file downloads and response_url.

Every request is recorded as a ``Call`` under the lock before its answer is sent, so a client
that has seen the answer always finds the call in ``FakeSlack.calls()``.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from aiohttp import web

from tests.fakes.common.records import Guard
from tests.fakes.slack.blocks import check_content
from tests.fakes.slack.methods import METHODS
from tests.fakes.slack.records import ApiError, Call, Fault
from tests.fakes.slack.world import Message, World

_FORMS = ("application/x-www-form-urlencoded", "multipart/form-data")
_SIGNIN_PAGE = "<!DOCTYPE html><html><body>Sign in to Fake Slack</body></html>"

Answer = tuple[int, dict[str, Any], dict[str, str]]


class WebApi:
    def __init__(self, world: World, guard: Guard) -> None:
        self.world = world
        self.guard = guard
        self.calls: list[Call] = []
        self.faults: dict[str, deque[Fault]] = {}
        self.revoked = False

    def routes(self, app: web.Application) -> None:
        app.router.add_route("*", "/api/{method}", self.api)
        app.router.add_post("/upload/v1/{file_id}", self.upload)
        app.router.add_get("/files-pri/{key}/download/{name}", self.download)
        app.router.add_get("/files-pri/{key}/{name}", self.download)
        app.router.add_get("/signin", self.signin)
        app.router.add_post("/actions/{token}", self.respond)

    # ------------------------------------------------------------------ Web API

    async def api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        token = _bearer(request)
        parse_error: ApiError | None = None
        try:
            params = await _params(request)
        except ApiError as error:
            params, parse_error = {}, error
        if token is None and isinstance(params.get("token"), str):
            token = params["token"]
        params.pop("token", None)
        with self.guard:
            status, body, headers = self._answer(method, params, token, parse_error)
            call = Call(
                method=method,
                params=params,
                token=token,
                at=time.monotonic(),
                ok=bool(body.get("ok")),
                error=body.get("error"),
            )
            self.calls.append(call)
        return web.json_response(body, status=status, headers=headers)

    def _answer(
        self, method: str, params: dict[str, Any], token: str | None, parse_error: ApiError | None
    ) -> Answer:
        fault = self._take_fault(method)
        if fault is not None:
            return _fault_answer(fault)
        auth_error = self._auth_error(method, token)
        if auth_error is not None:
            return 200, {"ok": False, "error": auth_error}, {}
        implementation = METHODS.get(method)
        if implementation is None:
            return 200, {"ok": False, "error": "unknown_method", "req_method": method}, {}
        try:
            if parse_error is not None:
                raise parse_error
            return 200, implementation(self.world, params), {}
        except ApiError as error:
            return 200, _error_body(error), {}

    def _take_fault(self, method: str) -> Fault | None:
        queue = self.faults.get(method)
        return queue.popleft() if queue else None

    def _auth_error(self, method: str, token: str | None) -> str | None:
        wants_app = method == "apps.connections.open"
        if self.revoked:
            return "invalid_auth" if wants_app else "token_revoked"
        ids = self.world.ids
        if not token:
            return "not_authed"
        if token == (ids.app_token if wants_app else ids.bot_token):
            return None
        return (
            "not_allowed_token_type" if token in (ids.app_token, ids.bot_token) else "invalid_auth"
        )

    # ------------------------------------------------------------------ files

    async def upload(self, request: web.Request) -> web.Response:
        file_id = request.match_info["file_id"]
        data = await request.read()
        with self.guard:
            fault = self._take_fault("files.upload")
            stored = self.world.files.get(file_id)
            if fault is None and stored is not None:
                stored.content = data
                stored.meta["size"] = len(data)
            error = None if stored is not None else "upload_not_found"
            params = {"file_id": file_id, "length": len(data)}
            self._record("files.upload", params, _bearer(request), fault, error)
        if fault is not None:
            return _fault_text(fault)
        if stored is None:
            return web.Response(status=404, text="upload_not_found", content_type="text/plain")
        return web.Response(text=f"OK - {len(data)}", content_type="text/plain")

    async def download(self, request: web.Request) -> web.StreamResponse:
        """Private files need the bot token; without it Slack redirects to a sign-in page."""
        file_id = request.match_info["key"].partition("-")[2]
        token = _bearer(request)
        with self.guard:
            fault = self._take_fault("files.download")
            stored = self.world.files.get(file_id)
            allowed = token == self.world.ids.bot_token and not self.revoked
            found = stored is not None and stored.content is not None
            error = None if found else "file_not_found"
            error = error if allowed else "not_authed"
            self._record("files.download", {"file_id": file_id}, token, fault, error)
        if fault is not None:
            return _fault_text(fault)
        if not allowed:
            raise web.HTTPFound(f"{self.world.origin}/signin?redir={request.path}")
        if stored is None or stored.content is None:
            return web.Response(status=404, text=_SIGNIN_PAGE, content_type="text/html")
        return web.Response(body=stored.content, content_type=stored.meta["mimetype"])

    async def signin(self, request: web.Request) -> web.Response:
        return web.Response(text=_SIGNIN_PAGE, content_type="text/html")

    def _record(
        self,
        method: str,
        params: dict[str, Any],
        token: str | None,
        fault: Fault | None,
        error: str | None,
    ) -> None:
        if fault is not None:
            error = fault.error or f"http_{fault.status}"
        self.calls.append(
            Call(
                method=method,
                params=params,
                token=token,
                at=time.monotonic(),
                ok=error is None,
                error=error,
            )
        )

    # ------------------------------------------------------------------ response_url

    async def respond(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return web.Response(status=400, text="invalid_payload", content_type="text/plain")
        with self.guard:
            target = self.world.response_urls.get(request.match_info["token"])
            error = "expired_url" if target is None else None
            try:
                if target is not None:
                    self._apply_response(body, *target)
            except ApiError as failure:
                error = failure.error
            self.calls.append(
                Call(
                    method="response_url",
                    params=body,
                    token=None,
                    at=time.monotonic(),
                    ok=error is None,
                    error=error,
                )
            )
        if error is not None:
            return web.Response(status=404 if target is None else 400, text=error)
        return web.Response(text="ok", content_type="text/plain")

    def _apply_response(self, body: dict[str, Any], channel: str, ts: str) -> None:
        """``replace_original``/``delete_original`` act on the clicked message; an
        ``in_channel`` response posts a new one; anything else is ephemeral (only recorded)."""
        world = self.world
        original = world.find(channel, ts)
        if body.get("delete_original"):
            if original is not None:
                world.remove(original)
            return
        blocks = check_content(body)
        if body.get("replace_original") and original is not None:
            original.text = str(body.get("text") or "")
            original.blocks = blocks or None
            return
        if body.get("response_type") == "in_channel":
            thread_ts = body.get("thread_ts")
            world.add_message(
                Message(
                    channel=channel,
                    ts=world.next_ts(),
                    user=world.ids.bot_user_id,
                    text=str(body.get("text") or ""),
                    by_bot=True,
                    blocks=blocks,
                    thread_ts=thread_ts if isinstance(thread_ts, str) else None,
                )
            )


def _bearer(request: web.Request) -> str | None:
    scheme, _, value = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer":
        return None
    return value.strip() or None


async def _params(request: web.Request) -> dict[str, Any]:
    """Merge query string, form body and JSON body, as Slack does."""
    params: dict[str, Any] = dict(request.query)
    if not request.can_read_body:
        return params
    if request.content_type == "application/json":
        try:
            body = await request.json()
        except ValueError:
            raise ApiError("invalid_json") from None
        if not isinstance(body, dict):
            raise ApiError("invalid_json")
        params.update(body)
    elif request.content_type in _FORMS:
        form = await request.post()
        for key, value in form.items():
            if isinstance(value, str):
                params[key] = value
            else:  # an uploaded file part: keep its bytes
                params[key] = value if isinstance(value, bytes | bytearray) else value.file.read()
    return params


def _error_body(error: ApiError) -> dict[str, Any]:
    body: dict[str, Any] = {"ok": False, "error": error.error}
    if error.detail:
        body["errors"] = [error.detail]
        body["response_metadata"] = {"messages": [f"[ERROR] {error.detail}"]}
    return body


def _fault_headers(fault: Fault) -> dict[str, str]:
    if fault.retry_after is not None:
        return {"Retry-After": str(fault.retry_after)}
    return {"Retry-After": "1"} if fault.status == 429 else {}


def _fault_answer(fault: Fault) -> Answer:
    default = "ratelimited" if fault.status == 429 else "fatal_error"
    return fault.status, {"ok": False, "error": fault.error or default}, _fault_headers(fault)


def _fault_text(fault: Fault) -> web.Response:
    text = fault.error or f"error {fault.status}"
    return web.Response(status=fault.status, text=text, headers=_fault_headers(fault))
