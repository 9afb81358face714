"""The parts of the route (design §5): a step, what steps learn, what they do to a message.

The router runs each message through one ordered list of steps (``router.route_steps``). A
step either handles the message, returning its outcome (the inbound metric's ``outcome``
label), or passes it on with ``None``, as middleware does in aiogram or ``next()`` in
slack-bolt. A step takes the narrow parts it uses in its constructor, so a feature's step
lives beside the feature and a new feature adds a step instead of a branch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from bot.commands.parsing import ParsedCommand
from bot.config.settings import Settings
from bot.delivery.outbox import Outbox
from bot.delivery.replies import ReplyContext
from bot.delivery.writer import ReplyWriter
from bot.hub import ChannelHub
from bot.messages import ConversationKey, OutboundKind, Reaction
from bot.metrics import DropReason, log_drop
from bot.pipeline.access import Role
from bot.pipeline.bus import Accepted
from bot.pipeline.journal import Journal
from bot.pipeline.lanes import Lanes, SubmitOutcome, TurnRequest
from bot.pipeline.sessions import Sessions
from bot.ports import Store

QUEUED_NOTICE = "⏳ Queued — I'll answer after the current reply."
BUSY_NOTICE = "I'm still working on your previous message. Wait for it, or send /stop."

ACCEPTED = "accepted"
"""The outcome of a message that went to a lane (a turn, or a push)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Asked:
    """A chat command in the message, and the role of whoever sent it."""

    command: ParsedCommand
    role: Role


@dataclass(slots=True, kw_only=True)
class Routing:
    """What earlier steps learnt about the message in hand; one per message, filled in order."""

    asked: Asked | None = None
    """Set by the command parse, before the pause and access gates (an admin's command
    passes a pause)."""
    key: ConversationKey | None = None
    """The conversation a turn would run in, once a step has looked it up."""

    def conversation(self) -> ConversationKey:
        """``key``, which a step before this one must have found."""
        if self.key is None:
            raise RuntimeError("route out of order: no earlier step found the conversation key")
        return self.key


class RouteStep(Protocol):
    async def route(self, item: Accepted, ctx: Routing) -> str | None:
        """The message's outcome if this step handled it; ``None``: the next step's turn."""
        ...


class RouteActions:
    """What any step does to the message it handles: drop or finish its journal entry,
    tell its sender, or hand it to its conversation's lane."""

    def __init__(  # noqa: PLR0913 - the kernel objects a message's ending touches
        self,
        settings: Callable[[], Settings],
        store: Store,
        *,
        hub: ChannelHub,
        outbox: Outbox,
        lanes: Lanes,
        sessions: Sessions,
    ) -> None:
        self._settings = settings
        self._store = store
        self._hub = hub
        self._outbox = outbox
        self._lanes = lanes
        self._sessions = sessions

    async def drop(self, item: Accepted, reason: DropReason) -> str:
        await Journal(self._store.inbound).dropped(item.entry_id, reason)
        log_drop(item.message, reason)
        return reason

    async def finish(self, item: Accepted, reason: str) -> None:
        await Journal(self._store.inbound).handled(item.entry_id, reason)

    async def submit(self, item: Accepted, request: TurnRequest) -> str:
        """Into the lane by the busy policy: acknowledged if queued, dropped if rejected."""
        outcome = self._lanes.submit(request, self._settings().conversations.busy_policy)
        if outcome is SubmitOutcome.QUEUED:
            await self._acknowledge_queued(item, request.key)
        elif outcome is SubmitOutcome.REJECTED:
            await self.notice(item, request.key, BUSY_NOTICE)
            return await self.drop(item, DropReason.BUSY)
        return ACCEPTED

    async def tell_sender(self, item: Accepted, text: str) -> None:
        """A notice in the sender's own conversation (before any reply key is looked up)."""
        await self.notice(item, self._sessions.scoped_key(item.message), text)

    async def tell_privately(self, item: Accepted, text: str) -> None:
        """A notice for the sender alone where the platform can show one (a refused button
        press), else in their conversation."""
        key = self._sessions.scoped_key(item.message)
        replies = self._replies(item, key, "private")
        if replies is not None:
            await replies.private(text, item.message.sender.id)

    async def notice(self, item: Accepted, key: ConversationKey, text: str) -> None:
        await self.send(item, key, text, OutboundKind.NOTICE, "notice")

    async def send(
        self, item: Accepted, key: ConversationKey, text: str, kind: OutboundKind, tag: str
    ) -> None:
        replies = self._replies(item, key, tag)
        if replies is not None:
            await replies.text(text, kind=kind)

    async def _acknowledge_queued(self, item: Accepted, key: ConversationKey) -> None:
        replies = self._replies(item, key, "queued")
        if replies is not None and Reaction.QUEUED in replies.caps.reactions:
            await replies.react(Reaction.QUEUED)
        else:
            await self.notice(item, key, QUEUED_NOTICE)

    def _replies(self, item: Accepted, key: ConversationKey, tag: str) -> ReplyWriter | None:
        """Replies to ``item`` in ``key``'s conversation; ``None`` if its channel is gone."""
        channel = self._hub.get(item.message.channel)
        if channel is None:
            return None
        ctx = ReplyContext.answering(key, item, tag=tag)
        return ReplyWriter(ctx, channel.capabilities, self._outbox.submit)
