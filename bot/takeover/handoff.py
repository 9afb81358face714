"""The agent's ``handoff`` tool (design §22): bound to the running turn's own
conversation, it mutes that conversation for ``access.handoff_mute``, announces the handoff in
every ``access.on_call`` chat through the push port (the daemon's ``Pusher``: recorded in the
outbox, sent by the chat's holder, once even if the turn runs again after a crash), and ends
the turn with the note "A human will take it from here: <reason>" in place of an answer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from typing_extensions import override

from bot.config.settings import Settings
from bot.pipeline.lanes import CancelReason, Quiet, TurnRequest
from bot.ports import Store
from bot.ports.mutes import TurnHandoff
from bot.ports.push import Push, PushRefused, PushRequest, PushTarget, PushText
from bot.takeover.mutes import MuteBook, MutesOff
from bot.takeover.takeover import end_turn

logger = logging.getLogger(__name__)

REASON_LIMIT = 300
NOTE = "🙋 A human will take it from here: {reason}"
ANNOUNCEMENT = "🙋 Handoff requested in {where} (asked by {who}): {reason}"


@dataclass(frozen=True, slots=True, kw_only=True)
class HandoffDeps:
    settings: Callable[[], Settings]
    book: MuteBook
    push: Push
    store: Store
    """Where the messages queued behind the ended turn are recorded as handled."""


class ConversationHandoff(TurnHandoff):
    def __init__(self, deps: HandoffDeps, request: TurnRequest, quiet: Quiet) -> None:
        self._deps = deps
        self._request = request
        self._quiet = quiet
        self._done = False

    @override
    async def handoff(self, reason: str) -> str:
        reason = " ".join(reason.split())
        if not reason:
            return "Error: say in a few words why a human should take over (`reason`)."
        if len(reason) > REASON_LIMIT:
            reason = reason[: REASON_LIMIT - 1] + "…"
        if self._done:
            return "Already handed off in this turn; nothing more to do."
        request, key = self._request, self._request.key
        last = request.items[-1].message if request.items else None
        actor = f"agent:{last.user_ref}" if last is not None else f"agent:{key.channel}"
        config = self._deps.settings().access
        try:
            await self._deps.book.mute(
                key, length=config.handoff_mute, reason=f"handoff: {reason}", actor=actor
            )
        except MutesOff:
            return "Error: handoffs are not available here (the store keeps no mutes)."
        self._done = True
        told = await self._announce(reason, actor)
        # Ends this very turn (the tool runs inside it): the note is posted in its place. The
        # cancellation lands at the next suspension, made here, so nothing of the turn (no
        # further model call, no answer) runs after the tool.
        note = NOTE.format(reason=reason)
        if await end_turn(self._quiet, self._deps.store, key, CancelReason.HANDOFF, note):
            await asyncio.sleep(0)
        return f"Handed off; the conversation is muted. {told}"

    async def _announce(self, reason: str, actor: str) -> str:
        """Tell every on-call chat; what came of it, for the model."""
        request = self._request
        targets = self._deps.settings().access.on_call
        if not targets:
            return "No on-call chat is configured (access.on_call)."
        last = request.items[-1] if request.items else None
        who = last.message.sender.shown_as if last else "?"
        text = ANNOUNCEMENT.format(where=request.key.describe(), who=who, reason=reason)
        turn = last.correlation_id if last is not None else request.key.describe()
        failed: list[str] = []
        for index, target in enumerate(targets):
            push = PushRequest(
                target=PushTarget(
                    channel=target.channel,
                    chat_id=target.chat,
                    account_id=target.account,
                    topic_id=target.topic,
                    chat_type=target.chat_type,
                ),
                body=PushText(text=text),
                idempotency_key=f"handoff/{turn}/{index}",
                actor=actor,
            )
            try:
                await self._deps.push(push)
            except PushRefused as exc:
                logger.warning(
                    "handoff: on-call %s %s refused: %s", target.channel, target.chat, exc
                )
                failed.append(f"{target.channel} {target.chat} ({exc.message})")
        if failed:
            return f"On-call notified, except: {'; '.join(failed)}."
        return "The on-call people were notified."


class Handoffs:
    """``TurnTools.handoff_for``: each turn's handoff, bound to its own conversation and ended
    through its own lane (``CancelToken.quiet``)."""

    def __init__(self, deps: HandoffDeps) -> None:
        self._deps = deps

    def __call__(self, request: TurnRequest, quiet: Quiet) -> TurnHandoff | None:
        """None for a turn that answers no chat message (a slow command), or where the store
        keeps no mutes."""
        if request.work is not None or not self._deps.book.available:
            return None
        return ConversationHandoff(self._deps, request, quiet)
