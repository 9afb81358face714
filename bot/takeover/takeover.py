"""Human takeover in the router and in a turn (design §22).

The router asks ``Takeover.intercept`` about every addressed message before it submits a turn:

- **yield**: in a group thread, a reply from a human (``access.yield_to``: one of
  ``access.humans``, or any member) that does not mention the bot, posted while the bot's turn
  for that thread runs and sent by someone that turn does not answer, ends the turn without a
  word (``CancelReason.YIELD``) and drops the thread's queued messages; the thread is then
  muted for ``access.yield_mute``. The human's message is recorded as handled, not answered.
- **mute**: a message in a muted conversation (or a muted chat) is recorded as handled with
  the reason ``muted``; no turn, no placeholder, no typing.

How a turn ended by a yield, a mute or a handoff finishes is the pipeline's
(``bot.pipeline.endings``): it is one of the ways every turn ends.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable

from bot.config.settings import Settings
from bot.messages import ChatType, ConversationKey, InboundMessage
from bot.pipeline.bus import Accepted
from bot.pipeline.journal import Journal
from bot.pipeline.lanes import CancelReason, Lanes, Quiet, TurnRequest
from bot.ports import Store
from bot.takeover.config import YieldTo
from bot.takeover.mutes import MuteBook

logger = logging.getLogger(__name__)

MUTED = "muted"
YIELDED = "yielded"
"""The router's outcomes (the inbound metric's ``outcome`` label) for held messages."""


class Takeover:
    def __init__(
        self, settings: Callable[[], Settings], book: MuteBook, lanes: Lanes, store: Store
    ) -> None:
        self._settings = settings
        self._book = book
        self._lanes = lanes
        self._store = store

    @property
    def book(self) -> MuteBook:
        return self._book

    async def intercept(self, item: Accepted, key: ConversationKey) -> str | None:
        """Keep ``item`` from the agent if a human took over; the outcome, or ``None``
        when it goes on to its turn."""
        message = item.message
        if self._yields_to(message, key):
            await self._yield(item, key)
            return YIELDED
        mute = await self._book.mute_over(key)
        if mute is None:
            return None
        await Journal(self._store.inbound).handled(item.entry_id, MUTED, key=key)
        logger.info("muted key=%s correlation=%s", key.describe(), item.correlation_id)
        return MUTED

    async def quiet(
        self, key: ConversationKey, reason: CancelReason, note: str | None = None
    ) -> bool:
        """End the key's running turn for ``reason`` and drop what waits behind it (recorded
        as handled); whether a turn was running."""
        quiet = functools.partial(self._lanes.quiet, key)
        return await end_turn(quiet, self._store, key, reason, note)

    def _yields_to(self, message: InboundMessage, key: ConversationKey) -> bool:
        """A human's reply in the thread of a running turn that does not answer them."""
        if message.chat_type is not ChatType.GROUP or message.thread_root_id is None:
            return False
        if key.topic_id is None or message.mentions_bot or message.sender.is_bot:
            return False
        access = self._settings().access
        if access.yield_to is YieldTo.NONE:
            return False
        if access.yield_to is YieldTo.HUMANS and message.user_ref not in access.humans:
            return False
        running = self._lanes.running_request(key)
        if running is None:
            return False
        return message.sender.id not in {queued.message.sender.id for queued in running.items}

    async def _yield(self, item: Accepted, key: ConversationKey) -> None:
        message = item.message
        await self.quiet(key, CancelReason.YIELD)
        await Journal(self._store.inbound).handled(item.entry_id, "yielded to a human", key=key)
        who = message.sender.shown_as
        logger.info(
            "yielded key=%s to=%s correlation=%s",
            key.describe(),
            message.user_ref,
            item.correlation_id,
        )
        length = self._settings().access.yield_mute
        if length is None or length.total_seconds() > 0:
            await self._book.mute(
                key, length=length, reason=f"yielded to {who}", actor=message.user_ref
            )


async def end_turn(
    quiet: Quiet, store: Store, key: ConversationKey, reason: CancelReason, note: str | None = None
) -> bool:
    """End ``key``'s running turn through ``quiet`` (its lane's) and record what waited behind
    it as handled; whether a turn was running."""
    running, cleared = quiet(reason, note)
    if cleared:
        # A task of its own, shielded: called from inside the turn it ends (a handoff),
        # the caller is cancelled at its next await.
        dropping = asyncio.create_task(
            drop(store, cleared, key, str(reason)), name=f"takeover:drop:{key.describe()}"
        )
        await asyncio.shield(dropping)
    return running


async def drop(
    store: Store, requests: list[TurnRequest], key: ConversationKey, reason: str
) -> None:
    for request in requests:
        for queued in request.items:
            await Journal(store.inbound).handled(queued.entry_id, reason, key=key)
