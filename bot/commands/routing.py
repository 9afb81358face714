"""The route's command steps (design §5, §9), beside the registry they use.

``ParseCommand`` runs early, before the pause and access gates, because an admin's command
passes a paused channel; it only notes the command (``Routing.asked``). ``AnswerCommand``
runs it after access and the length bound. A fast command answers on the router; a slow one
(``Command.slow``: the agent or the network) waits its turn in the conversation's lane under
a deadline, so one slow agent server never stalls every chat.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from typing_extensions import override

from bot.commands.parsing import parse_command
from bot.commands.registry import CommandCall, CommandEnv, CommandRegistry
from bot.hub import ChannelHub
from bot.messages import ConversationKey, OutboundKind
from bot.pipeline.access import AccessControl, Role
from bot.pipeline.bus import Accepted
from bot.pipeline.journal import Journal
from bot.pipeline.lanes import Lanes, TurnRequest
from bot.pipeline.route import Asked, RouteActions, RouteStep, Routing
from bot.pipeline.sessions import destination_for
from bot.ports import Store

logger = logging.getLogger(__name__)

COMMAND = "command"
"""The outcome (the inbound metric's ``outcome`` label) of a message that was a command."""
SLOW_COMMAND_DEADLINE_S = 60.0
"""A command that waits on the agent or the network (``/new``, ``/reload``) answers within this."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatCommands:
    """The commands the router answers, and what they need beyond the kernel's parts."""

    registry: CommandRegistry
    agent_description: str
    reload: Callable[[str], Awaitable[str]]


class ParseCommand(RouteStep):
    """Notes a ``/command`` in the message and its sender's role; never handles it."""

    def __init__(self, hub: ChannelHub, registry: CommandRegistry, access: AccessControl) -> None:
        self._hub = hub
        self._registry = registry
        self._access = access

    @override
    async def route(self, item: Accepted, ctx: Routing) -> str | None:
        message = item.message
        if message.button is not None:
            return None  # a button press answers a question; its payload is no command
        channel = self._hub.get(message.channel)
        names = channel.identity.usernames if channel is not None else frozenset[str]()
        parsed = parse_command(message.text, self._registry.names, names)
        if parsed is not None:
            ctx.asked = Asked(command=parsed, role=self._access.role(message))
        return None


class AnswerCommand(RouteStep):
    """Runs the command ``ParseCommand`` noted; ``/new`` and ``/stop`` stop the conversation
    first, on the router, before a slow command waits its turn in the lane."""

    def __init__(self, env: CommandEnv, registry: CommandRegistry, actions: RouteActions) -> None:
        self._env = env
        self._registry = registry
        self._actions = actions

    @override
    async def route(self, item: Accepted, ctx: Routing) -> str | None:
        asked = ctx.asked
        if asked is None:
            return None
        parsed, role, env = asked.command, asked.role, self._env
        key = await env.sessions.key_for(item.message)
        command = self._registry.command(parsed.name)
        stopped = (False, 0)
        if command.stops_conversation and (role is Role.ADMIN or not command.admin):
            stopped = await env.stop_conversation(key)
        call = CommandCall(
            message=item.message,
            key=key,
            args=parsed.args,
            raw_args=parsed.raw_args,
            role=role,
            env=env,
            stopped=stopped,
        )
        answer = functools.partial(self._answer, item, call, parsed.name)
        if not command.slow:
            await answer()
            return COMMAND
        destination = destination_for(item.message, key)
        request = TurnRequest(key=key, destination=destination, items=(item,), work=answer)
        env.lanes.submit(request, env.settings().conversations.busy_policy)
        return COMMAND

    async def _answer(self, item: Accepted, call: CommandCall, name: str) -> None:
        started = time.monotonic()
        try:
            async with asyncio.timeout(SLOW_COMMAND_DEADLINE_S):
                reply = await self._registry.dispatch(name, call)
        except TimeoutError:
            logger.warning("command /%s timed out correlation=%s", name, item.correlation_id)
            reply = (
                f"⚠️ `/{name}` did not finish in time (the agent or a platform is slow). "
                "Try again in a moment."
            )
        await self._actions.send(item, call.key, reply, OutboundKind.COMMAND, "command")
        await self._actions.finish(item, f"command /{name}")
        logger.info(
            "command /%s key=%s correlation=%s role=%s duration=%.3fs",
            name,
            call.key.describe(),
            item.correlation_id,
            call.role,
            time.monotonic() - started,
        )


async def stop_conversation(lanes: Lanes, store: Store, key: ConversationKey) -> tuple[bool, int]:
    """``/stop`` and ``/new``: end the running reply, and drop (as handled) what waits behind it;
    (a reply was running, messages dropped)."""
    was_running, cleared = lanes.stop(key)
    for request in cleared:
        for queued in request.items:
            await Journal(store.inbound).handled(queued.entry_id, "stopped", key=key)
    return was_running, sum(len(request.items) for request in cleared)
