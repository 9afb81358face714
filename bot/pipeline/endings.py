"""How a turn ends without an answer: one function for every such ending (design §8, §11,
§21, §22).

A turn is cancelled (``/stop``, a newer message, a shutdown, a timeout), taken over by a human
(a yield, a mute, a handoff: the takeover room asks for them with ``Lanes.cancel``), recalled
(its message withdrawn), revised (its message edited: it runs again), or lost (another replica
took its chat). ``end_turn`` stops its progress stream and takes its placeholder back or
finishes it, as the ending says; the turn runner calls it for all of them.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum

from bot.delivery.progress import ProgressStream
from bot.delivery.replies import plan_text
from bot.delivery.writer import Record, ReplyWriter
from bot.messages import MessageRemoval, Reaction
from bot.pipeline import lost_turns
from bot.pipeline import revised_turns as revised
from bot.pipeline.lanes import CancelReason, CancelToken
from bot.pipeline.recovery import INTERRUPTED_PLACEHOLDER
from bot.ports import Store

logger = logging.getLogger(__name__)


class Ending(StrEnum):
    """How a turn ended."""

    ANSWERED = "answered"
    FAILED = "failed"
    CANCELLED = "cancelled"
    """``/stop``, a newer message, a timeout: the placeholder says so, the messages are handled."""
    QUIET = "quiet"
    """A human took over (a yield, a mute, a handoff, design §22)."""
    REVISED = "revised"
    """Its message was edited: it runs again, into the same placeholder (design §21)."""
    RECALLED = "recalled"
    """Its message was withdrawn: its placeholder goes (design §21)."""
    LOST = "lost"
    """Another replica took the chat and answers it (design §11 "Fencing")."""
    SHUTDOWN = "shutdown"
    """The daemon stops: the placeholder says so; the messages stay journaled and resume."""


_ENDINGS = {
    CancelReason.LOST: Ending.LOST,
    CancelReason.YIELD: Ending.QUIET,
    CancelReason.MUTE: Ending.QUIET,
    CancelReason.HANDOFF: Ending.QUIET,
    CancelReason.REVISED: Ending.REVISED,
    CancelReason.RECALLED: Ending.RECALLED,
    CancelReason.SHUTDOWN: Ending.SHUTDOWN,
}
QUIET_REASONS = frozenset(r for r, ending in _ENDINGS.items() if ending is Ending.QUIET)
LEFT_BEHIND = {
    CancelReason.YIELD: "↪️ Left to a teammate.",
    CancelReason.MUTE: "🔇 Muted.",
}
"""What a shown placeholder of a quiet ending becomes where the platform cannot delete it."""
CANCELLED_TEXT = {
    CancelReason.STOP: "⏹️ Stopped.",
    CancelReason.INTERRUPT: "⏭️ Interrupted by your new message.",
    CancelReason.SHUTDOWN: "🔄 The bot is restarting; this reply will resume shortly.",
}
"""What the placeholder of a cancelled turn becomes (after the text streamed so far)."""


def ending_of(reason: CancelReason) -> Ending:
    return _ENDINGS.get(reason, Ending.CANCELLED)


@dataclass(frozen=True, slots=True, kw_only=True)
class EndingTurn:
    """What ending a turn works with."""

    stream: ProgressStream
    replies: ReplyWriter
    store: Store
    record: Record
    handled: Callable[[str], Awaitable[None]]
    """Finish the turn's messages in the journal as handled, with a reason."""


@dataclass(frozen=True, slots=True)
class _Fate:
    """What becomes of an ending turn's placeholder and of its messages."""

    tag: str
    text: str
    finish: bool = False
    """Make the placeholder ``text`` (a new message where there is none); else take it back:
    none, nothing to do; deleted where the platform deletes; else edited to ``text``."""
    key: int | str = 0
    """Recorded under ``<correlation>/<tag>/<key>``."""
    handled: str | None = None
    """The journal reason the turn's messages are finished with; ``None``: left as they are."""


async def end_turn(turn: EndingTurn, token: CancelToken) -> None:
    """End a turn that gives no answer: stop its stream; its placeholder is taken back or
    finished with a line saying why; its messages are finished in the journal, except on a
    shutdown (they resume) and a loss (the new holder answers them)."""
    reason = token.reason or CancelReason.SHUTDOWN
    ending = ending_of(reason)
    streamed = turn.stream.text.strip()
    placeholder = await turn.stream.close()
    fate = await _fate(turn, ending, token, streamed, placeholder)
    if fate is None:
        return
    await _settle(turn, placeholder, fate)
    if ending is Ending.QUIET:  # a "working" mark left behind would promise an answer
        await turn.replies.tagged(f"react-{Reaction.DONE}").react(Reaction.DONE)
    if ending is Ending.LOST and placeholder is not None:
        await lost_turns.hand_over(turn.store, turn.replies.ctx, placeholder)
    if fate.handled is not None:
        await turn.handled(fate.handled)


async def _fate(
    turn: EndingTurn, ending: Ending, token: CancelToken, streamed: str, placeholder: str | None
) -> _Fate | None:
    if ending is Ending.REVISED:
        return None  # the restart streams into the same placeholder
    if ending is Ending.LOST:
        ctx = turn.replies.ctx
        if placeholder is None or not await lost_turns.left_here(turn.stream, ctx, turn.store):
            return None  # the new holder finishes it
        return _Fate(lost_turns.LOST_TAG, INTERRUPTED_PLACEHOLDER, key=placeholder)
    if ending is Ending.RECALLED:
        if placeholder is None and turn.replies.caps.deletes:
            correlation = turn.replies.ctx.correlation_id
            await revised.remove_left_placeholder(turn.store, turn.record, correlation)
        withdrawn = revised.RECALLED_REASON
        return _Fate(revised.RECALLED_TAG, revised.RECALLED_TEXT, handled=withdrawn)
    return _said(ending, token, streamed)


def _said(ending: Ending, token: CancelToken, streamed: str) -> _Fate:
    """A quiet or cancelled turn's placeholder: one line saying why (a handoff's note)."""
    reason = token.reason or CancelReason.SHUTDOWN
    if ending is Ending.QUIET:
        tag = str(reason).replace(" ", "-")
        if token.note:  # a handoff's note takes the placeholder's place
            return _Fate(tag, token.note, finish=True, handled=str(reason))
        text = LEFT_BEHIND.get(reason, LEFT_BEHIND[CancelReason.YIELD])
        return _Fate(tag, text, handled=str(reason))
    text = CANCELLED_TEXT.get(reason, CANCELLED_TEXT[CancelReason.STOP])
    if ending is Ending.SHUTDOWN:
        return _Fate(str(reason), text, finish=True)
    if streamed:
        text = f"{streamed}\n\n{text}"
    return _Fate(str(reason), text, finish=True, handled=str(reason))


async def _settle(turn: EndingTurn, placeholder: str | None, fate: _Fate) -> None:
    ctx, caps = turn.replies.ctx.tagged(fate.tag), turn.replies.caps
    if not fate.finish and placeholder is None:
        return
    if not fate.finish and placeholder is not None and caps.deletes:
        removal = MessageRemoval(destination=ctx.destination, message_id=placeholder)
        await turn.record([ctx.item(fate.key, removal)])
        return
    first = plan_text(ctx, fate.text, caps, placeholder_id=placeholder)[:1]
    await turn.record([ctx.item(fate.key, delivery) for delivery in first])
