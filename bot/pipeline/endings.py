"""How a turn a human took over ends (design §22): the yield, the mute and the handoff end a
running turn without an answer. The turn runner finishes them here; the takeover room only
asks for them (``Lanes.cancel`` with a quiet reason)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from bot.delivery.progress import ProgressStream
from bot.delivery.writer import Record, ReplyWriter
from bot.messages import MessageRemoval, Reaction
from bot.pipeline.lanes import CancelReason, CancelToken

LEFT_BEHIND = {
    CancelReason.YIELD: "↪️ Left to a teammate.",
    CancelReason.MUTE: "🔇 Muted.",
}
"""What a shown placeholder becomes where the platform cannot delete it."""


QUIET_REASONS = frozenset({CancelReason.YIELD, CancelReason.MUTE, CancelReason.HANDOFF})


async def end_quietly(
    stream: ProgressStream,
    replies: ReplyWriter,
    record: Record,
    token: CancelToken,
    mark: Callable[[], Awaitable[None]],
) -> None:
    """Finish a turn a human took over: no answer; its placeholder goes (deleted, or one
    short line where the platform cannot delete); a handoff's note is posted in its place;
    the asker's message, marked "working" where the platform shows reactions, is marked done
    (a "working" mark left behind would promise an answer). ``mark`` records the turn's
    messages as handled."""
    await _withdraw(stream, replies, record, token)
    await replies.tagged(f"react-{Reaction.DONE}").react(Reaction.DONE)
    await mark()


async def _withdraw(
    stream: ProgressStream, replies: ReplyWriter, record: Record, token: CancelToken
) -> None:
    placeholder = await stream.close()
    reason = token.reason or CancelReason.YIELD
    writer = replies.tagged(str(reason).replace(" ", "-"))
    if token.note:
        await writer.text(token.note, placeholder_id=placeholder, max_messages=1)
        return
    if placeholder is None:
        return
    if replies.caps.deletes:
        removal = MessageRemoval(destination=replies.ctx.destination, message_id=placeholder)
        await record([writer.ctx.item("remove", removal)])
        return
    text = LEFT_BEHIND.get(reason, LEFT_BEHIND[CancelReason.YIELD])
    await writer.text(text, placeholder_id=placeholder, max_messages=1)
