"""The route's first step for a prompt the operator pushed (``run_agent``, design §19).

Beside ``pusher``, which journals the prompt and puts it on the bus: its token authorised
it, so access, addressing and commands do not apply; only a paused channel holds it off.
"""

from __future__ import annotations

from collections.abc import Callable

from typing_extensions import override

from bot.config.settings import Settings
from bot.hub import ChannelHub
from bot.messages import MessageOrigin
from bot.metrics import DropReason
from bot.pipeline.bus import Accepted
from bot.pipeline.lanes import Lanes, SubmitOutcome, TurnRequest
from bot.pipeline.route import ACCEPTED, RouteActions, RouteStep, Routing
from bot.pipeline.sessions import Sessions, destination_for


class OperatorPushes(RouteStep):
    def __init__(
        self,
        settings: Callable[[], Settings],
        hub: ChannelHub,
        sessions: Sessions,
        lanes: Lanes,
        actions: RouteActions,
    ) -> None:
        self._settings = settings
        self._hub = hub
        self._sessions = sessions
        self._lanes = lanes
        self._actions = actions

    @override
    async def route(self, item: Accepted, ctx: Routing) -> str | None:
        message = item.message
        if message.origin is not MessageOrigin.OPERATOR:
            return None
        if self._hub.is_paused(message.channel):
            return await self._actions.drop(item, DropReason.PAUSED)
        key = self._sessions.scoped_key(message)
        request = TurnRequest(key=key, destination=destination_for(message, key), items=(item,))
        outcome = self._lanes.submit(request, self._settings().conversations.busy_policy)
        if outcome is SubmitOutcome.REJECTED:  # no "busy" notice: nobody in the chat asked
            return await self._actions.drop(item, DropReason.BUSY)
        return ACCEPTED
