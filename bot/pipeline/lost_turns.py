"""How a turn ends when another replica took its chat over (design §11 "Fencing").

Without a word: the new holder runs it again and answers. One thing only this replica can
clean up is a placeholder it sent itself that the holder never learnt of: a send whose fence
check passed just before a stall and which landed after the takeover, or one the platform took
while the store link was down, so its row was not marked sent when the holder looked. The
holder finishes every placeholder it found (edited to the interrupted notice, under the
placeholder's finishing key); one without that edit is recorded here for removal
(``endings.end_turn``), a row the holder's outbox sends in the chat's order (this replica's
own attempt is fenced out), and the chat shows one answer, not the answer beside a stale
"…▍" copy.
"""

from __future__ import annotations

import logging

from bot.delivery.progress import ProgressStream
from bot.delivery.replies import ReplyContext
from bot.pipeline.recovery import finishing_key
from bot.ports import Store

logger = logging.getLogger(__name__)

LOST_TAG = "lost"
"""The idempotency namespace of a lost turn's placeholder removal
(``<correlation>/lost/<message id>``)."""


async def left_here(stream: ProgressStream, ctx: ReplyContext, store: Store) -> bool:
    """Whether the closed stream sent a placeholder itself that the new holder did not
    finish: this replica is to take it back."""
    sent_as = stream.placeholder_key
    if sent_as is None:
        return False
    finishing = finishing_key(ctx.correlation_id, sent_as)
    rows = await store.outbox.for_correlation(ctx.correlation_id)
    return not any(row.item.idempotency_key == finishing for row in rows)


async def hand_over(store: Store, ctx: ReplyContext, placeholder: str) -> None:
    """Wake the chat's holder: its outbox sends the removal (``ChatOwnership``)."""
    await store.leases.wake(["*"])
    logger.info(
        "lost turn correlation=%s: its placeholder %s is left to the chat's holder to remove",
        ctx.correlation_id,
        placeholder,
    )
