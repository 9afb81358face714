"""The route's usage step (design §25): the message rate, then budgets, before a turn starts.

It stands after access and addressing (only messages that would start a turn count) and
before the lane, so neither a flood nor a spent budget takes a run from anyone else. A
refused message is answered in its chat (the rate's reply at most once a minute) and finished
in the journal as handled, with its outcome (``rate_limited``, ``over_budget``) counted in the
inbound metric like every other.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from typing_extensions import override

from bot.messages import ConversationKey, InboundMessage
from bot.pipeline.access import Role
from bot.pipeline.bus import Accepted
from bot.pipeline.journal import Journal
from bot.pipeline.route import RouteActions, RouteStep, Routing
from bot.usage.budgets import Budgets, requester
from bot.usage.rate import MessageRate

logger = logging.getLogger(__name__)

RATE_LIMITED = "rate_limited"
"""The outcome of a message past its sender's ``usage.messages_per_minute``."""
OVER_BUDGET = "over_budget"
"""The outcome of a message a spent budget holds."""


class UsageGate(RouteStep):
    """Refuses a message past its sender's rate or a spent budget; passes the rest on."""

    def __init__(
        self,
        *,
        rate: MessageRate,
        budgets: Budgets,
        role_of: Callable[[InboundMessage], Role],
        actions: RouteActions,
        journal: Journal,
    ) -> None:
        self._rate = rate
        self._budgets = budgets
        self._role_of = role_of
        self._actions = actions
        self._journal = journal

    @override
    async def route(self, item: Accepted, ctx: Routing) -> str | None:
        message, key = item.message, ctx.conversation()
        who = requester(message, self._role_of(message))
        flooded = await self._rate.check(who)
        if flooded is not None:
            logger.info(
                "rate limited channel=%s user=%r count=%d limit=%d correlation=%s",
                who.channel,
                who.user_id,
                flooded.count,
                flooded.limit,
                item.correlation_id,
            )
            return await self._refuse(item, key, RATE_LIMITED, flooded.text)
        spent = await self._budgets.check(who)
        if spent is None:
            return None
        logger.info(
            "over budget channel=%s user=%r chat=%r scope=%s per=%s %s=%s limit=%s correlation=%s",
            who.channel,
            who.user_id,
            who.chat_id,
            spent.scope,
            spent.per,
            spent.measure,
            spent.used,
            spent.limit,
            item.correlation_id,
        )
        return await self._refuse(item, key, OVER_BUDGET, spent.text)

    async def _refuse(
        self, item: Accepted, key: ConversationKey, outcome: str, text: str | None
    ) -> str:
        if text is not None:
            await self._actions.notice(item, key, text)
        await self._journal.handled(item.entry_id, outcome, key=key)
        return outcome
