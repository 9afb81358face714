"""What REST handlers take and give: a decoded request, a route, the reply kinds, decoding.

Handlers are plain functions of an ``ApiRequest`` that return a JSON object (HTTP 200) or
``Raw`` bytes, and raise ``ApiError`` for anything else. They run under the fake's lock.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.common.wire import FilePart, Raw, read_multipart
from tests.fakes.dingtalk import codes
from tests.fakes.dingtalk.records import ApiError

TOKEN_HEADER = "x-acs-dingtalk-access-token"  # noqa: S105 - a header name


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiRequest:
    path: str
    params: dict[str, str]  # path parameters
    query: dict[str, str]
    body: Any  # the decoded JSON body; None for GET / multipart
    form: dict[str, str] = field(default_factory=dict)
    files: dict[str, FilePart] = field(default_factory=dict)

    def field(self, name: str) -> Any:
        return self.body.get(name) if isinstance(self.body, dict) else None

    def text(self, name: str) -> str:
        """A required non-empty string field (400 InvalidParameter otherwise)."""
        value = self.field(name)
        if not isinstance(value, str) or not value:
            raise codes.bad(codes.INVALID_PARAMETER, f"{name} is required and must be a string")
        return value

    def record(self) -> dict[str, Any] | None:
        """The body as ``Call.body`` keeps it."""
        if self.files or self.form:
            parts: dict[str, Any] = dict(self.form)
            for name, part in self.files.items():
                parts[name] = {
                    "filename": part.filename,
                    "size": len(part.data),
                    "content_type": part.content_type,
                }
            return parts
        return self.body if isinstance(self.body, dict) else None


Reply = dict[str, Any] | Raw
Handler = Callable[[ApiRequest], Reply]


@dataclass(frozen=True, slots=True)
class Route:
    """``auth``: "header" (OpenAPI token in ``x-acs-dingtalk-access-token``), "query" (oapi
    ``access_token`` parameter) or "none". ``errcode``: failures answer HTTP 200 + errcode."""

    method: str
    path: str  # aiohttp pattern
    handler: Handler
    auth: str = "header"
    errcode: bool = False


def token_of(request: web.Request) -> str | None:
    return request.headers.get(TOKEN_HEADER) or request.query.get("access_token") or None


async def decode(request: web.Request, route: Route) -> ApiRequest:
    """Decode the body: multipart for uploads, else a JSON object (or nothing)."""
    params, query = dict(request.match_info), dict(request.query)
    if request.content_type == "multipart/form-data":
        form, files = await read_multipart(request)
        return ApiRequest(
            path=request.path, params=params, query=query, body=None, form=form, files=files
        )
    raw = await request.read()
    body: Any = None
    if raw:
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise _not_json(route)
    return ApiRequest(path=request.path, params=params, query=query, body=body)


def _not_json(route: Route) -> ApiError:
    if route.errcode:
        return codes.errcode(codes.OAPI_MISSING, "缺少参数 json")
    return codes.bad(codes.INVALID_PARAMETER, "the body must be a JSON object")
