"""``POST /v1.0/gateway/connections/open``: credentials in, a websocket endpoint and ticket out.

Each ticket carries the subscriptions of the request that got it, and opens one socket
(``/connect?ticket=T``): an unknown ticket is refused with 401, a used one with 403. The SDK
treats any non-2xx answer as "log, sleep 10 s, try again".
"""

from __future__ import annotations

from collections.abc import Callable

from tests.fakes.dingtalk import codes
from tests.fakes.dingtalk.frames import CALLBACK, EVENT
from tests.fakes.dingtalk.wire import ApiRequest, Reply, Route
from tests.fakes.dingtalk.world import World

OPEN_PATH = "/v1.0/gateway/connections/open"
CONNECT_PATH = "/connect"

Subscriptions = frozenset[tuple[str, str]]  # {(type, topic)}


class Gateway:
    def __init__(self, world: World, origin: Callable[[], str]) -> None:
        self._world = world
        self._origin = origin
        self.tickets: dict[str, Subscriptions] = {}
        self.used: set[str] = set()

    def routes(self) -> list[Route]:
        return [Route("POST", OPEN_PATH, self.open_connection, auth="none")]

    def open_connection(self, request: ApiRequest) -> Reply:
        ids = self._world.ids
        given = (request.field("clientId"), request.field("clientSecret"))
        if self._world.refuse_credentials or given != (ids.client_id, ids.client_secret):
            raise codes.openapi(401, codes.INVALID_AUTH, "clientId or clientSecret is invalid")
        subscriptions = _subscriptions(request.field("subscriptions"))
        ticket = World.new_id("tk", 16)
        self.tickets[ticket] = subscriptions
        endpoint = self._origin().replace("http://", "ws://", 1) + CONNECT_PATH
        return {"endpoint": endpoint, "ticket": ticket}

    def claim(self, ticket: str) -> Subscriptions | int:
        """The ticket's subscriptions (now used up), or the HTTP status refusing it."""
        if ticket not in self.tickets:
            return 401
        if ticket in self.used:
            return 403
        self.used.add(ticket)
        return self.tickets[ticket]


def _subscriptions(value: object) -> Subscriptions:
    if not isinstance(value, list):
        raise codes.bad(codes.INVALID_PARAMETER, "subscriptions must be a list")
    found: set[tuple[str, str]] = set()
    for item in value:
        kind = item.get("type") if isinstance(item, dict) else None
        topic = item.get("topic") if isinstance(item, dict) else None
        if kind not in (CALLBACK, EVENT) or not isinstance(topic, str) or not topic:
            raise codes.bad(codes.INVALID_PARAMETER, f"bad subscription: {item!r}")
        found.add((kind, topic))
    return frozenset(found)
