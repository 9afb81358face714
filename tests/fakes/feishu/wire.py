"""The shapes REST handlers take and give: a decoded request, a route, and the reply kinds."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.common.wire import FilePart, Raw
from tests.fakes.feishu import codes


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiRequest:
    params: dict[str, str]  # path parameters
    query: dict[str, str]
    body: Any  # decoded JSON body (None for multipart / empty)
    form: dict[str, str] = field(default_factory=dict)
    files: dict[str, FilePart] = field(default_factory=dict)

    def field(self, name: str) -> Any:
        return self.body.get(name) if isinstance(self.body, dict) else None

    def text(self, name: str, *, required: bool = True) -> str:
        """A string body field; a missing or non-string one fails like the gateway does."""
        value = self.field(name)
        if value is None and not required:
            return ""
        if not isinstance(value, str) or (required and not value):
            raise codes.field_error(name)
        return value


@dataclass(frozen=True, slots=True)
class TopLevel:
    """A success whose fields sit beside ``code``/``msg`` (token and bot-info endpoints)."""

    fields: dict[str, Any]
    msg: str = "ok"


Reply = dict[str, Any] | Raw | TopLevel
Handler = Callable[[ApiRequest], Reply]


@dataclass(frozen=True, slots=True)
class Route:
    method: str
    path: str  # aiohttp pattern, e.g. "/open-apis/im/v1/messages/{message_id}"
    name: str
    handler: Handler
    auth: bool = True  # needs ``Authorization: Bearer <tenant token>``
