"""``im/v1/messages/:message_id/reactions``: add and remove the bot's emoji reactions."""

from __future__ import annotations

import re
from typing import Any

from tests.fakes.feishu import codes
from tests.fakes.feishu.records import ApiError
from tests.fakes.feishu.wire import ApiRequest, Reply, Route
from tests.fakes.feishu.world import Reaction, World

_EMOJI = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


class Reactions:
    def __init__(self, world: World) -> None:
        self._world = world

    def routes(self) -> list[Route]:
        base = "/open-apis/im/v1/messages/{message_id}/reactions"
        return [
            Route("POST", base, "im.message_reaction.create", self.create),
            Route("DELETE", f"{base}/{{reaction_id}}", "im.message_reaction.delete", self.delete),
        ]

    def _json(self, reaction: Reaction) -> dict[str, Any]:
        return {
            "reaction_id": reaction.reaction_id,
            "operator": {"operator_id": self._world.ids.app_id, "operator_type": "app"},
            "action_time": str(reaction.action_time),
            "reaction_type": {"emoji_type": reaction.emoji_type},
        }

    def create(self, request: ApiRequest) -> Reply:
        message_id = request.params["message_id"]
        found = self._world.messages.get(message_id)
        if found is None or found.deleted:
            raise ApiError(codes.REACTION_MESSAGE_NOT_FOUND, "message not found")
        kind = request.field("reaction_type")
        emoji = kind.get("emoji_type") if isinstance(kind, dict) else None
        if not isinstance(emoji, str) or not _EMOJI.match(emoji):
            raise ApiError(codes.REACTION_INVALID, "reaction type is invalid")
        reaction = Reaction(
            reaction_id=World.new_id("", 16),
            message_id=message_id,
            emoji_type=emoji,
            action_time=World.now_ms(),
        )
        self._world.reactions[reaction.reaction_id] = reaction
        return self._json(reaction)

    def delete(self, request: ApiRequest) -> Reply:
        reaction = self._world.reactions.get(request.params["reaction_id"])
        if reaction is None or reaction.message_id != request.params["message_id"]:
            raise ApiError(codes.REACTION_NOT_FOUND, "reaction not found")
        del self._world.reactions[reaction.reaction_id]
        return self._json(reaction)
