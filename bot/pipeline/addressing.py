"""Whether a group message is for the bot, and what becomes of one that is not (design §5, §20).

A group message counts when it mentions or replies to the bot, stays in a topic the bot is
in, or the channel's ``group_policy`` is ``all``. The route's ``Unaddressed`` step drops the
rest: as ``heard`` when ``group_policy: listen`` keeps it as context (``group_context``),
else as ``not_addressed``. Beside ``group_context``, which the commands import.
"""

from __future__ import annotations

from collections.abc import Callable

from typing_extensions import override

from bot.config.settings import GroupPolicy, Settings
from bot.messages import ChatType, InboundMessage
from bot.metrics import DropReason
from bot.pipeline.bus import Accepted
from bot.pipeline.group_context import GroupContext
from bot.pipeline.route import RouteActions, RouteStep, Routing
from bot.pipeline.sessions import Sessions
from bot.ports import Store


class Addressing:
    def __init__(self, settings: Callable[[], Settings], sessions: Sessions, store: Store) -> None:
        self._settings = settings
        self._sessions = sessions
        self._store = store

    async def addressed(self, message: InboundMessage) -> bool:
        """Group messages count when they mention or reply to the bot or stay in its topic."""
        policy = self._settings().channel_policy(message.channel)
        if policy.group_policy is GroupPolicy.ALL or message.mentions_bot or message.reply_to_bot:
            return True
        if await self._sessions.replied_key(message) is not None:
            return True
        if message.thread_root_id is None:
            return False
        return await self._store.conversations.topic_known(self._sessions.scoped_key(message))


class Unaddressed(RouteStep):
    """Group chatter not for the bot: heard as context (listen), or dropped."""

    def __init__(self, addressing: Addressing, heard: GroupContext, actions: RouteActions) -> None:
        self._addressing = addressing
        self._heard = heard
        self._actions = actions

    @override
    async def route(self, item: Accepted, ctx: Routing) -> str | None:
        message = item.message
        if message.chat_type is not ChatType.GROUP or await self._addressing.addressed(message):
            return None
        reason = DropReason.HEARD if self._heard.hear(message) else DropReason.NOT_ADDRESSED
        return await self._actions.drop(item, reason)
