"""Inbound → access → command, answer or turn → lane (design §5, §7, §9, §10).

One dispatcher consumes the bus in order; everything it does per message is a few store
lookups, so it never waits on an agent. Turns run in their conversation's lane.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bot.commands import CommandCall, CommandEnv, CommandRegistry, ParsedCommand, parse_command
from bot.config.settings import GroupPolicy, Settings
from bot.delivery.outbox import Outbox
from bot.delivery.replies import ReplyContext
from bot.delivery.writer import ReplyWriter
from bot.hub import ChannelHub
from bot.messages import (
    ChatType,
    ConversationKey,
    InboundMessage,
    MessageOrigin,
    OutboundKind,
    Reaction,
)
from bot.metrics import Counters, DropReason, log_drop
from bot.pipeline.access import AccessControl, Role
from bot.pipeline.bus import Accepted, BusClosed, InboundBus
from bot.pipeline.clarifications import Answer, Clarifications
from bot.pipeline.inbound_bounds import InboundBounds
from bot.pipeline.lanes import Lanes, SubmitOutcome, TurnRequest
from bot.pipeline.revisions import RevisionDeps, Revisions
from bot.pipeline.sessions import Sessions, destination_for
from bot.pipeline.takeover import Takeover
from bot.ports import Store
from bot.records import InboundStatus

logger = logging.getLogger(__name__)

QUEUED_NOTICE = "⏳ Queued — I'll answer after the current reply."
BUSY_NOTICE = "I'm still working on your previous message. Wait for it, or send /stop."
STALE_BUTTON_NOTICE = "That question was already answered or has expired."

SLOW_COMMAND_DEADLINE_S = 60.0
"""A command that waits on the agent or the network (``/new``, ``/reload``) answers within this."""

# Outcomes of routing one message besides the drop reasons (the metric's ``outcome`` label).
ACCEPTED = "accepted"
ANSWER = "answer"
COMMAND = "command"
STALE_BUTTON = "stale_button"
ROUTING_ERROR = "routing_error"


@dataclass(frozen=True, slots=True, kw_only=True)
class RouterDeps:
    settings: Callable[[], Settings]
    store: Store
    bus: InboundBus
    hub: ChannelHub
    access: AccessControl
    commands: CommandRegistry
    clarifications: Clarifications
    sessions: Sessions
    lanes: Lanes
    outbox: Outbox
    counters: Counters
    agent_description: str
    reload: Callable[[str], Awaitable[str]]
    takeover: Takeover | None = None
    """Mutes and yields to humans (design §22); ``None``: never held."""


class Router:
    def __init__(self, deps: RouterDeps) -> None:
        self._deps = deps
        self._settings = deps.settings
        self._store = deps.store
        self._hub = deps.hub
        self._access = deps.access
        self._commands = deps.commands
        self._clarifications = deps.clarifications
        self._sessions = deps.sessions
        self._lanes = deps.lanes
        self._counters = deps.counters
        self._bounds = InboundBounds(deps.settings, deps.clarifications, self._addressed)
        self._revisions = Revisions(
            RevisionDeps(
                settings=deps.settings, store=deps.store, lanes=deps.lanes, outbox=deps.outbox,
                hub=deps.hub, sessions=deps.sessions, submit=self._submit,
            )
        )  # fmt: skip
        self._command_env = CommandEnv(
            settings=deps.settings,
            store=deps.store,
            hub=deps.hub,
            lanes=deps.lanes,
            sessions=deps.sessions,
            bus=deps.bus,
            agent_description=deps.agent_description,
            stop_conversation=self.stop_conversation,
            reload=deps.reload,
            takeover=deps.takeover,
        )

    async def run(self) -> None:
        """Dispatch bus items until the bus closes."""
        while True:
            try:
                item = await self._deps.bus.get()
            except BusClosed:
                return
            outcome: str = ROUTING_ERROR
            try:
                outcome = await self.handle(item)
            except Exception:
                logger.exception("failed to route message correlation=%s", item.correlation_id)
                await self._store.inbound.update(
                    item.entry_id, InboundStatus.FAILED, reason="routing error"
                )
            finally:
                # Once per routed message, after all its effects: tests wait on this count.
                self._counters.inbound(item.message.channel, outcome)

    async def handle(self, item: Accepted) -> str:  # noqa: PLR0911 - one exit per stage
        """Route one message; returns its outcome (the ``outcome`` label of the metric)."""
        message = item.message
        self._deps.outbox.mark_reachable((message.channel, message.account_id, message.chat_id))
        if message.origin is MessageOrigin.OPERATOR:
            return await self._pushed(item)
        if message.sender.is_bot and self._ignores_bots(message.channel):
            return await self._drop(item, DropReason.FROM_BOT)
        if message.revision is not None:  # an edit or recall of a message (design §21)
            if refused := await self._refuse_oversize(item, is_command=False):
                return refused
            self._sessions.heard.revise(message)  # of group chatter kept as context
            return await self._revisions.handle(item)
        parsed = self._parse_command(message)
        role = self._access.role(message)
        if self._hub.is_paused(message.channel) and not (parsed and role is Role.ADMIN):
            return await self._drop(item, DropReason.PAUSED)
        verdict = await self._access.check(message)
        if not verdict.allowed:
            if verdict.reply:
                await self._notice(item, self._sessions.scoped_key(message), verdict.reply)
            return await self._drop(item, verdict.reason or DropReason.NOT_ALLOWED)
        if refused := await self._refuse_oversize(item, is_command=parsed is not None):
            return refused
        if parsed is not None:
            return await self._command(item, parsed, role)
        return await self._conversation(item)

    async def _conversation(self, item: Accepted) -> str:
        message = item.message
        answer = await self._clarifications.match(message, is_command=False)
        if answer is not None:
            if held := await self._taken_over(item, answer.clarification.key):
                return held
            self._submit_answer(item, answer)
            return ANSWER
        if message.button is not None:
            await self._notice(item, self._sessions.scoped_key(message), STALE_BUTTON_NOTICE)
            await self._finish(item, "stale button")
            return STALE_BUTTON
        heard = self._sessions.heard
        if message.chat_type is ChatType.GROUP and not await self._addressed(message):
            reason = DropReason.HEARD if heard.hear(message) else DropReason.NOT_ADDRESSED
            return await self._drop(item, reason)
        key = await self._sessions.key_for(message)
        if held := await self._taken_over(item, key):
            return held  # muted, or a human stepped in (design §22)
        request = TurnRequest(
            key=key, destination=destination_for(message, key), items=(item,),
            context=heard.take(message),
        )  # fmt: skip
        return await self._submit(item, request)

    async def _refuse_oversize(self, item: Accepted, *, is_command: bool) -> str | None:
        """Refuse a message over ``max_inbound_chars`` (``inbound_bounds``); ``None``: go on."""
        oversize = await self._bounds.check(item.message, is_command=is_command)
        if oversize is None:
            return None
        if oversize.reply:
            await self._notice(item, self._sessions.scoped_key(item.message), oversize.reply)
        return await self._drop(item, DropReason.TOO_LONG)

    async def _taken_over(self, item: Accepted, key: ConversationKey) -> str | None:
        takeover = self._command_env.takeover
        return None if takeover is None else await takeover.intercept(item, key)

    async def _pushed(self, item: Accepted) -> str:
        """A prompt the operator pushed (``run_agent``, design §19): its token authorised it, so
        access, addressing and commands do not apply; only a paused channel holds it off."""
        message = item.message
        if self._hub.is_paused(message.channel):
            return await self._drop(item, DropReason.PAUSED)
        key = self._sessions.scoped_key(message)
        request = TurnRequest(key=key, destination=destination_for(message, key), items=(item,))
        outcome = self._lanes.submit(request, self._settings().conversations.busy_policy)
        if outcome is SubmitOutcome.REJECTED:  # no "busy" notice: nobody in the chat asked
            return await self._drop(item, DropReason.BUSY)
        return ACCEPTED

    def _ignores_bots(self, channel: str) -> bool:
        """Other bots are ignored unless the channel opts in (adapters drop our own)."""
        return self._settings().channel_policy(channel).ignore_bots

    def _parse_command(self, message: InboundMessage) -> ParsedCommand | None:
        if message.button is not None:
            return None
        channel = self._hub.get(message.channel)
        names = channel.identity.usernames if channel is not None else frozenset[str]()
        return parse_command(message.text, self._commands.names, names)

    async def _addressed(self, message: InboundMessage) -> bool:
        """Group messages count when they mention or reply to the bot or stay in its topic."""
        policy = self._settings().channel_policy(message.channel)
        if policy.group_policy is GroupPolicy.ALL or message.mentions_bot or message.reply_to_bot:
            return True
        if await self._sessions.replied_key(message) is not None:
            return True
        if message.thread_root_id is None:
            return False
        return await self._store.conversations.topic_known(self._sessions.scoped_key(message))

    def _submit_answer(self, item: Accepted, answer: Answer) -> None:
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

    async def _submit(self, item: Accepted, request: TurnRequest) -> str:
        outcome = self._lanes.submit(request, self._settings().conversations.busy_policy)
        if outcome is SubmitOutcome.QUEUED:
            await self._acknowledge_queued(item, request.key)
        elif outcome is SubmitOutcome.REJECTED:
            await self._notice(item, request.key, BUSY_NOTICE)
            return await self._drop(item, DropReason.BUSY)
        return ACCEPTED

    async def _acknowledge_queued(self, item: Accepted, key: ConversationKey) -> None:
        replies = self._replies(item, key, "queued")
        if replies is not None and Reaction.QUEUED in replies.caps.reactions:
            await replies.react(Reaction.QUEUED)
        else:
            await self._notice(item, key, QUEUED_NOTICE)

    async def _command(self, item: Accepted, parsed: ParsedCommand, role: Role) -> str:
        key = await self._sessions.key_for(item.message)
        command = self._commands.command(parsed.name)
        stopped = (False, 0)
        if command.stops_conversation and (role is Role.ADMIN or not command.admin):
            stopped = await self.stop_conversation(key)
        call = CommandCall(
            message=item.message, key=key, args=parsed.args, raw_args=parsed.raw_args,
            role=role, env=self._command_env, stopped=stopped,
        )  # fmt: skip
        answer = functools.partial(self._answer_command, item, call, parsed.name)
        if not command.slow:
            await answer()
            return COMMAND
        request = TurnRequest(
            key=key, destination=destination_for(item.message, key), items=(item,), work=answer
        )
        self._lanes.submit(request, self._settings().conversations.busy_policy)
        return COMMAND

    async def _answer_command(self, item: Accepted, call: CommandCall, name: str) -> None:
        started = time.monotonic()
        try:
            async with asyncio.timeout(SLOW_COMMAND_DEADLINE_S):
                reply = await self._commands.dispatch(name, call)
        except TimeoutError:
            logger.warning("command /%s timed out correlation=%s", name, item.correlation_id)
            reply = (
                f"⚠️ `/{name}` did not finish in time (the agent or a platform is slow). "
                "Try again in a moment."
            )
        await self._send(item, call.key, reply, OutboundKind.COMMAND, "command")
        await self._finish(item, f"command /{name}")
        logger.info(
            "command /%s key=%s correlation=%s role=%s duration=%.3fs",
            name, call.key.describe(), item.correlation_id, call.role,
            time.monotonic() - started,
        )  # fmt: skip

    async def stop_conversation(self, key: ConversationKey) -> tuple[bool, int]:
        was_running, cleared = self._lanes.stop(key)
        for request in cleared:
            for queued in request.items:
                await self._store.inbound.update(
                    queued.entry_id, InboundStatus.HANDLED, reason="stopped", key=key
                )
        return was_running, sum(len(request.items) for request in cleared)

    # ------------------------------------------------------------------ helpers

    def _replies(self, item: Accepted, key: ConversationKey, tag: str) -> ReplyWriter | None:
        """Replies to ``item`` in ``key``'s conversation; ``None`` if its channel is gone."""
        channel = self._hub.get(item.message.channel)
        if channel is None:
            return None
        ctx = ReplyContext.answering(key, item, tag=tag)
        return ReplyWriter(ctx, channel.capabilities, self._deps.outbox.submit)

    async def _send(
        self, item: Accepted, key: ConversationKey, text: str, kind: OutboundKind, tag: str
    ) -> None:
        replies = self._replies(item, key, tag)
        if replies is not None:
            await replies.text(text, kind=kind)

    async def _notice(self, item: Accepted, key: ConversationKey, text: str) -> None:
        await self._send(item, key, text, OutboundKind.NOTICE, "notice")

    async def _finish(self, item: Accepted, reason: str) -> None:
        await self._store.inbound.update(item.entry_id, InboundStatus.HANDLED, reason=reason)

    async def _drop(self, item: Accepted, reason: DropReason) -> str:
        await self._store.inbound.update(item.entry_id, InboundStatus.DROPPED, reason=reason)
        log_drop(item.message, reason)
        return reason
