"""AI cards (PLATFORMS §4 "AI / streaming card"): create, deliver, stream, update.

- ``POST /v1.0/card/instances``: ``cardTemplateId`` registered with ``add_card_template``,
  an unused ``outTrackId``, ``cardData.cardParamMap`` an object of strings, ``callbackType``
  "STREAM". The ``imRobotOpenSpaceModel`` / ``imGroupOpenSpaceModel`` sent here decide where
  the card may be delivered (DingTalk needs the space's model at creation).
- ``POST /v1.0/card/instances/deliver``: a known ``outTrackId``; ``openSpaceId``
  ``dtv1.card//IM_ROBOT.<staffId>`` (a known user; ``imRobotOpenDeliverModel.spaceType``
  "IM_ROBOT") or ``dtv1.card//IM_GROUP.<openConversationId>`` (a group the robot is in;
  ``imGroupOpenDeliverModel.robotCode`` this app's).
- ``PUT /v1.0/card/streaming``: only on a delivered card, never for a key that got
  ``isFinalize`` nor once flowStatus is 3 (finished) or 5 (failed). ``isFull`` replaces the
  key's text, otherwise the chunk is appended.
- ``PUT /v1.0/card/instances``: merges ``cardData.cardParamMap`` (``flowStatus`` included).
Every success is ``{"success": true, "result": ...}``.
"""

from __future__ import annotations

import re
from typing import Any

from tests.fakes.dingtalk import codes
from tests.fakes.dingtalk.records import CardUpdate
from tests.fakes.dingtalk.wire import ApiRequest, Reply, Route
from tests.fakes.dingtalk.world import FINISHED_FLOW_STATUSES, Card, World

_SPACE = re.compile(r"dtv1\.card//(IM_ROBOT|IM_GROUP)\.(.+)")
_OPEN_SPACE_MODELS = {"IM_ROBOT": "imRobotOpenSpaceModel", "IM_GROUP": "imGroupOpenSpaceModel"}
_DELIVER_MODELS = {"IM_ROBOT": "imRobotOpenDeliverModel", "IM_GROUP": "imGroupOpenDeliverModel"}


def _param_map(card_data: object) -> dict[str, str]:
    params = card_data.get("cardParamMap") if isinstance(card_data, dict) else None
    if not isinstance(params, dict) or not all(isinstance(v, str) for v in params.values()):
        raise codes.bad(codes.CARD_PARAM, "cardData.cardParamMap must map names to strings")
    return dict(params)


def _flag(request: ApiRequest, name: str) -> bool:
    value = request.field(name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise codes.bad(codes.INVALID_PARAMETER, f"{name} must be a boolean")
    return value


class Cards:
    def __init__(self, world: World) -> None:
        self._world = world

    def routes(self) -> list[Route]:
        return [
            Route("POST", "/v1.0/card/instances", self.create),
            Route("POST", "/v1.0/card/instances/deliver", self.deliver),
            Route("PUT", "/v1.0/card/streaming", self.streaming),
            Route("PUT", "/v1.0/card/instances", self.update),
        ]

    def _card(self, request: ApiRequest) -> Card:
        found = self._world.cards.get(request.text("outTrackId"))
        if found is None:
            raise codes.bad(codes.CARD_NOT_FOUND, "no card instance with this outTrackId")
        return found

    def create(self, request: ApiRequest) -> Reply:
        template = request.text("cardTemplateId")
        if template not in self._world.card_templates:
            raise codes.bad(codes.CARD_TEMPLATE, f"card template {template!r} does not exist")
        out_track_id = request.text("outTrackId")
        if out_track_id in self._world.cards:
            raise codes.bad(codes.OUT_TRACK_ID_USED, "outTrackId is already used")
        params = _param_map(request.field("cardData"))
        if request.field("callbackType") != "STREAM":
            raise codes.bad(codes.CARD_PARAM, "callbackType must be STREAM")
        spaces = frozenset(
            space
            for space, key in _OPEN_SPACE_MODELS.items()
            if isinstance(request.field(key), dict)
        )
        self._world.cards[out_track_id] = Card(
            out_track_id=out_track_id, template_id=template, params=params, open_spaces=spaces
        )
        return {"success": True, "result": out_track_id}

    def deliver(self, request: ApiRequest) -> Reply:
        card = self._card(request)
        match = _SPACE.fullmatch(request.text("openSpaceId"))
        if match is None:
            raise codes.bad(codes.SPACE_INVALID, "openSpaceId must be dtv1.card//IM_*.<id>")
        space, target = match.group(1), match.group(2)
        model = request.field(_DELIVER_MODELS[space])
        if not isinstance(model, dict):
            raise codes.bad(codes.CARD_PARAM, f"{_DELIVER_MODELS[space]} is required")
        if space not in card.open_spaces:
            raise codes.bad(codes.CARD_PARAM, f"created without {_OPEN_SPACE_MODELS[space]}")
        if request.field("userIdType") not in (None, 1):
            raise codes.bad(codes.CARD_PARAM, "userIdType must be 1 (userid)")
        self._check_target(space, target, model)
        card.space, card.target_id, card.delivered = space, target, True
        result = {
            "spaceType": space,
            "spaceId": target,
            "success": True,
            "carrierId": World.new_id("", 10),
        }
        return {"success": True, "result": [result]}

    def _check_target(self, space: str, target: str, model: dict[str, Any]) -> None:
        if space == "IM_ROBOT":
            if model.get("spaceType") != "IM_ROBOT":
                raise codes.bad(codes.CARD_PARAM, "imRobotOpenDeliverModel.spaceType: IM_ROBOT")
            if target not in self._world.users:
                raise codes.bad(codes.SPACE_INVALID, f"unknown user {target!r}")
            return
        if model.get("robotCode") != self._world.ids.client_id:
            raise codes.bad(codes.ROBOT_CODE, "imGroupOpenDeliverModel.robotCode is not this app's")
        group = self._world.groups.get(target)
        if group is None or not group.robot_in:
            raise codes.bad(codes.ROBOT_NOT_IN_GROUP, "the robot is not a member of this group")

    def streaming(self, request: ApiRequest) -> Reply:
        card = self._card(request)
        key, content = request.text("key"), request.field("content")
        request.text("guid")
        if not isinstance(content, str):
            raise codes.bad(codes.INVALID_PARAMETER, "content must be a string")
        is_full, is_final, is_error = (
            _flag(request, name) for name in ("isFull", "isFinalize", "isError")
        )
        if not card.delivered:
            raise codes.bad(codes.CARD_NOT_DELIVERED, "the card has not been delivered")
        if card.flow_status in FINISHED_FLOW_STATUSES or key in card.finalized_keys:
            raise codes.bad(codes.CARD_FINISHED, "the card's stream is already finished")
        card.content[key] = content if is_full else card.content.get(key, "") + content
        if is_final:
            card.finalized_keys.add(key)
        card.error = card.error or is_error
        card.updates.append(CardUpdate("streaming", dict(request.body)))
        return {"success": True, "result": True}

    def update(self, request: ApiRequest) -> Reply:
        card = self._card(request)
        card.params.update(_param_map(request.field("cardData")))
        card.updates.append(CardUpdate("update", dict(request.body)))
        return {"success": True, "result": True}
