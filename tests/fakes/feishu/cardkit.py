"""``cardkit/v1``: card entities and the streaming-card operations, with Feishu's rules.

- ``POST cards`` takes ``{"type": "card_json", "data": "<card JSON string>"}`` (<= 30 KB,
  200860; unparsable 200220). ``config.streaming_mode`` needs schema 2.0 and
  ``update_multi`` not false (300302).
- Every update carries ``sequence`` (int32 >= 1) that must be greater than the card's last one
  (300317), counted across element, settings and full updates alike. A repeated ``uuid``
  is a no-op success.
- ``PUT .../elements/:element_id/content`` needs streaming mode on (300309), a known
  ``element_id`` (300313) on a ``markdown``/``plain_text`` element (300310).
- ``PATCH .../settings`` merges ``settings.config`` (e.g. ``streaming_mode``) into the card.
- ``PUT cards/:card_id`` replaces the card JSON.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.fakes.feishu import codes, content
from tests.fakes.feishu.records import ApiError
from tests.fakes.feishu.wire import ApiRequest, Reply, Route
from tests.fakes.feishu.world import Card, World

_INT32_MAX = 2**31 - 1
_BAD_PARAM = "Your request contains an invalid request parameter"


def _card_json(kind: object, data: object) -> dict[str, Any]:
    if kind != "card_json":
        raise ApiError(codes.CARDKIT_PARAM, f"{_BAD_PARAM}: type")
    if not isinstance(data, str) or not data:
        raise codes.field_error("data")
    if len(data.encode()) > content.RICH_LIMIT:
        raise ApiError(codes.CARD_TOO_BIG, "Card content exceeds limit.")
    try:
        card = json.loads(data)
    except ValueError:
        card = None
    if not isinstance(card, dict) or content.card_problem(card) is not None:
        raise ApiError(codes.CARD_GENERATE_FAILED, "Failed to generate card content")
    config = card.get("config")
    if not isinstance(config, dict):
        config = {}
    if config.get("streaming_mode") is True:
        if card.get("schema") != "2.0":
            raise ApiError(codes.CARD_GENERATE_FAILED, "streaming_mode needs a schema 2.0 card")
        if config.get("update_multi") is False:
            raise ApiError(300302, "update_multi property is false")
    return card


def _streaming(card: dict[str, Any]) -> bool:
    config = card.get("config")
    return isinstance(config, dict) and config.get("streaming_mode") is True


class CardKit:
    def __init__(self, world: World) -> None:
        self._world = world

    def routes(self) -> list[Route]:
        one = "/open-apis/cardkit/v1/cards/{card_id}"
        return [
            Route("POST", "/open-apis/cardkit/v1/cards", "cardkit.card.create", self.create),
            Route("PUT", one, "cardkit.card.update", self.update),
            Route("PATCH", f"{one}/settings", "cardkit.card.settings", self.settings),
            Route(
                "PUT",
                f"{one}/elements/{{element_id}}/content",
                "cardkit.card_element.content",
                self.element_content,
            ),
        ]

    def _card(self, request: ApiRequest) -> Card:
        found = self._world.cards.get(request.params["card_id"])
        if found is None:
            raise ApiError(codes.CARD_NOT_FOUND, "The card entity does not exist")
        return found

    @staticmethod
    def _sequence(request: ApiRequest) -> int:
        sequence = request.field("sequence")
        if type(sequence) is not int or not 1 <= sequence <= _INT32_MAX:
            raise codes.field_error("sequence")
        return sequence

    @staticmethod
    def _apply(card: Card, request: ApiRequest, op: str, change: Callable[[], None]) -> Reply:
        sequence = CardKit._sequence(request)
        uuid = request.field("uuid")
        if isinstance(uuid, str) and uuid in card.uuids:
            return {}
        if sequence <= card.sequence:
            raise ApiError(
                codes.SEQUENCE_NOT_INCREASING,
                "The sequence number for operating on the card did not increment consecutively",
            )
        change()
        card.sequence = sequence
        card.operations.append((op, sequence))
        if isinstance(uuid, str) and uuid:
            card.uuids.add(uuid)
        return {}

    def create(self, request: ApiRequest) -> Reply:
        data = _card_json(request.field("type"), request.field("data"))
        card = Card(card_id=World.new_card_id(), data=data, streaming_mode=_streaming(data))
        self._world.cards[card.card_id] = card
        return {"card_id": card.card_id}

    def update(self, request: ApiRequest) -> Reply:
        card = self._card(request)
        body = request.field("card")
        if not isinstance(body, dict):
            raise codes.field_error("card")
        data = _card_json(body.get("type"), body.get("data"))

        def replace() -> None:
            card.data, card.streaming_mode = data, _streaming(data)

        return self._apply(card, request, "update", replace)

    def settings(self, request: ApiRequest) -> Reply:
        card = self._card(request)
        try:
            settings = json.loads(request.text("settings"))
        except ValueError:
            settings = None
        config = settings.get("config", {}) if isinstance(settings, dict) else None
        streaming = config.get("streaming_mode", False) if isinstance(config, dict) else None
        if not isinstance(config, dict) or not isinstance(streaming, bool):
            raise ApiError(codes.CARDKIT_PARAM, f"{_BAD_PARAM}: settings")

        def merge() -> None:
            card.data.setdefault("config", {}).update(config)
            card.streaming_mode = _streaming(card.data)

        return self._apply(card, request, "settings", merge)

    def element_content(self, request: ApiRequest) -> Reply:
        card = self._card(request)
        text = request.text("content")
        element_id = request.params["element_id"]
        if not card.streaming_mode:
            raise ApiError(codes.STREAMING_CLOSED, "Card streaming closed")
        node = content.element_index(card.data).get(element_id)
        if node is None:
            raise ApiError(
                codes.ELEMENT_NOT_FOUND,
                f"Failed to update element properties, ErrMsg: not find elementID {element_id}",
            )
        if node.get("tag") not in content.TEXT_TAGS:
            raise ApiError(codes.ONLY_TEXT, "Only update text")

        def put() -> None:
            node["content"] = text

        return self._apply(card, request, f"content:{element_id}", put)
