"""The route's gates: other bots, paused channels and access control (design §5, §10).

Steps of the route (``bot.pipeline.route``), beside ``access``: they drop what may not reach
the bot, with the drop reason the metric and the journal record. Kept apart from ``access``
because the commands import it, and the route imports the commands.
"""

from __future__ import annotations

from collections.abc import Callable

from typing_extensions import override

from bot.config.settings import Settings
from bot.hub import ChannelHub
from bot.metrics import DropReason
from bot.pipeline.access import AccessControl, Role
from bot.pipeline.bus import Accepted
from bot.pipeline.route import RouteActions, RouteStep, Routing


class IgnoredBots(RouteStep):
    """Other bots are ignored unless the channel opts in (adapters drop our own)."""

    def __init__(self, settings: Callable[[], Settings], actions: RouteActions) -> None:
        self._settings = settings
        self._actions = actions

    @override
    async def route(self, item: Accepted, ctx: Routing) -> str | None:
        message = item.message
        if message.sender.is_bot and self._settings().channel_policy(message.channel).ignore_bots:
            return await self._actions.drop(item, DropReason.FROM_BOT)
        return None


class PausedChannels(RouteStep):
    """A paused channel's messages are dropped, except an admin's commands (``/resume``)."""

    def __init__(self, hub: ChannelHub, actions: RouteActions) -> None:
        self._hub = hub
        self._actions = actions

    @override
    async def route(self, item: Accepted, ctx: Routing) -> str | None:
        if not self._hub.is_paused(item.message.channel):
            return None
        if ctx.asked is not None and ctx.asked.role is Role.ADMIN:
            return None
        return await self._actions.drop(item, DropReason.PAUSED)


class AccessGate(RouteStep):
    """Who may use the bot where (``access``); a refusal may carry a reply (a pairing code)."""

    def __init__(self, access: AccessControl, actions: RouteActions) -> None:
        self._access = access
        self._actions = actions

    @override
    async def route(self, item: Accepted, ctx: Routing) -> str | None:
        verdict = await self._access.check(item.message)
        if verdict.allowed:
            return None
        if verdict.reply:
            await self._actions.tell_sender(item, verdict.reply)
        return await self._actions.drop(item, verdict.reason or DropReason.NOT_ALLOWED)
