"""Answers to the agent's questions, and presses of buttons nobody waits on (design §7).

Steps of the route (``bot.pipeline.route``) beside ``clarifications``, after the commands: a
message that answers a pending question resumes that question's conversation (unless a
human took it over, design §22); a button press that answers nothing gets a short notice.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from typing_extensions import override

from bot.config.settings import Settings
from bot.messages import ConversationKey
from bot.pipeline.bus import Accepted
from bot.pipeline.clarifications import Answer, Clarifications
from bot.pipeline.lanes import Lanes, TurnRequest
from bot.pipeline.route import RouteActions, RouteStep, Routing
from bot.pipeline.sessions import destination_for

logger = logging.getLogger(__name__)

ANSWER = "answer"
STALE_BUTTON = "stale_button"
"""Outcomes (the inbound metric's ``outcome`` label)."""
STALE_BUTTON_NOTICE = "That question was already answered or has expired."

Intercept = Callable[[Accepted, ConversationKey], Awaitable[str | None]]
"""``Takeover.intercept``: the outcome of a message held back from the agent, or ``None``."""


class Answers(RouteStep):
    """An answer runs in its question's conversation; never merged with others or rejected."""

    def __init__(
        self,
        settings: Callable[[], Settings],
        clarifications: Clarifications,
        lanes: Lanes,
        intercept: Intercept,
    ) -> None:
        self._settings = settings
        self._clarifications = clarifications
        self._lanes = lanes
        self._intercept = intercept

    @override
    async def route(self, item: Accepted, ctx: Routing) -> str | None:
        answer = await self._clarifications.match(item.message, is_command=False)
        if answer is None:
            return None
        if held := await self._intercept(item, answer.clarification.key):
            return held
        self._submit(item, answer)
        return ANSWER

    def _submit(self, item: Accepted, answer: Answer) -> None:
        clarification = answer.clarification
        request = TurnRequest(
            key=clarification.key,
            destination=destination_for(item.message, clarification.key),
            items=(item,),
            answered=clarification,
            answer=answer.text,
        )
        self._lanes.submit(request, self._settings().conversations.busy_policy)
        logger.info(
            "answer for clarification=%s correlation=%s", clarification.id, item.correlation_id
        )


class StaleButtons(RouteStep):
    """A button press that no pending question took (answered, expired, or never ours)."""

    def __init__(self, actions: RouteActions) -> None:
        self._actions = actions

    @override
    async def route(self, item: Accepted, ctx: Routing) -> str | None:
        if item.message.button is None:
            return None
        await self._actions.tell_sender(item, STALE_BUTTON_NOTICE)
        await self._actions.finish(item, "stale button")
        return STALE_BUTTON
