"""Which chats this replica serves, on a store several replicas share (design §11 "replicas").

Each chat is held by one live replica, which routes its messages, runs its conversations'
turns and sends its outbox rows; so busy policies, ``/stop``, merged turns and per-chat order
work across replicas exactly as in one process. A chat is the unit (not a conversation)
because routing in a chat depends on the chat: a reply to any bot message, a question answered
by the next message, a new topic anchored at a message.

- **Intake** (``admit``): a replica that journals a message claims its chat. If it holds the
  chat, it takes the message, and any older one another replica journaled for the chat that
  was not yet taken, in journal order. If another live replica holds it, the message stays in
  the journal for that replica, which is woken (NOTIFY) to take it.
- **Sweep** (``run``, the kernel task ``ownership``: on a wake-up, else every ``SWEEP_S``):
  messages journaled for this replica's chats, and the chats of replicas that are gone (killed,
  or stopped with work left) with their unfinished messages and pending outbox rows, are taken.
  A wake-up also makes the outbox poll: rows another process recorded (a push) go out at once.
  What a gone replica had in hand is recovered as a restart recovers it (design §11): an answer
  already recorded is delivered, a started turn runs again with the resuming notice, the
  placeholders it left are finished or withdrawn; the chat's outbox rows wait meanwhile.
- **Rebalancing** (``bot/fleet/rebalance.py``, in the same loop): a replica above its
  fair share hands idle chats to less loaded ones.

On a store that is not shared (SQLite) every chat is this daemon's, intake puts messages on the
bus directly, start-up recovery resumes the whole journal, and nothing is rebalanced.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable, Coroutine, Sequence
from typing import Final

from bot.delivery.outbox import Outbox
from bot.delivery.ratelimit import DestinationKey
from bot.errors import StoreError
from bot.fleet.fence import ChatFence
from bot.fleet.rebalance import Rebalancer
from bot.messages import utc_now
from bot.pipeline.bus import Accepted, InboundBus
from bot.pipeline.recovery import LeftPlaceholders, Notify, Submit, recover
from bot.ports import Store
from bot.records import Adoption, ChatRef, JournalEntry

logger = logging.getLogger(__name__)

SWEEP_S: Final = 1.0
"""How often the replica looks for work nobody live holds (a wake-up comes sooner)."""

Spawn = Callable[[str, Callable[[], Coroutine[object, object, None]]], None]


def _destination(chat: ChatRef) -> DestinationKey:
    return (chat.channel, chat.account_id, chat.chat_id)


class ChatOwnership:
    def __init__(  # noqa: PLR0913 - the pieces a takeover touches
        self,
        store: Store,
        bus: InboundBus,
        outbox: Outbox,
        placeholders: LeftPlaceholders,
        *,
        replica_id: str,
        expiry_s: Callable[[], float],
        notify: Notify,
        submit: Submit,
        rebalancer: Rebalancer,
        fence: ChatFence,
        spawn: Spawn,
        warm: Callable[[], None] = lambda: None,
    ) -> None:
        self._leases = store.leases
        self._bus = bus
        self._outbox = outbox
        self._placeholders = placeholders
        self.replica_id = replica_id
        self._expiry_s = expiry_s
        self._recover_left = functools.partial(recover, store, bus, notify, submit, warm=warm)
        self.rebalancer = rebalancer
        self._fence = fence
        self._woken = asyncio.Event()
        self._spawn = spawn
        """Starts a kernel task unless it runs (``recovery:<channel>`` after a takeover)."""
        self.taken_over = 0
        """Chats taken from replicas that were gone (for logs and tests)."""
        self._leases.on_wake(replica_id, self._wake)

    def _wake(self) -> None:
        """Another process recorded work: messages journaled for this replica's chats (the
        sweep takes them) or outbox rows (a push): the outbox looks at the store now instead
        of at its next poll, so a push to a chat held here goes out at once."""
        self._woken.set()
        self._outbox.repoll()

    @property
    def shared(self) -> bool:
        return self._leases.shared

    async def admit(self, items: Sequence[Accepted]) -> None:
        """Journaled messages, each holding a bus reservation: onto the bus if this replica
        holds their chat (with older ones of the chat nobody took), else left for the holder.
        Intake calls it on a shared store only (alone, a daemon puts them on the bus itself)."""
        chats = {ChatRef.of(item.message) for item in items}
        try:
            adoption = await self._leases.adopt(self.replica_id, utc_now(), self._expiry_s(), chats)
        except BaseException as exc:
            for _ in items:
                self._bus.release()
            if not isinstance(exc, StoreError):
                raise
            # Journaled already, so accepted: whoever holds (or next takes) the chat runs them.
            logger.warning("could not claim %d chat(s) (%s); the sweep takes them", len(chats), exc)
            return
        self._fence.note(adoption)
        taken = {adopted.entry.id for adopted in adoption.entries}
        for item in items:
            if item.entry_id not in taken:
                self._bus.release()
        with self._outbox.paused([_destination(chat) for chat in adoption.claimed]):
            await self._settle(adoption, {item.entry_id: item for item in items})
        if adoption.others:
            logger.debug("%d chat(s) held by other replicas: left for them", len(adoption.others))

    async def sweep(self, *, fresh_start: bool = False) -> Adoption | None:
        """Take what waits for this replica or was left by one that is gone."""
        if self._bus.closed:
            return None
        now, expiry = utc_now(), self._expiry_s()
        chats = await self._leases.orphaned(self.replica_id, now, expiry, fresh_start=fresh_start)
        if not chats:
            return None
        with self._outbox.paused([_destination(chat) for chat in chats]):
            adoption = await self._leases.adopt(
                self.replica_id, now, expiry, chats, fresh_start=fresh_start
            )
            self._fence.note(adoption)
            await self._settle(adoption, {})
        return adoption

    async def run(self) -> None:
        """Sweep on every wake-up, and every ``SWEEP_S`` in any case; rebalance at most once
        per ``SWEEP_S`` (wake-ups come with every message journaled elsewhere)."""
        while True:
            self._woken.clear()
            await self.sweep()
            if not self._bus.closed:
                await self.rebalancer.when_due(SWEEP_S)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(SWEEP_S):
                    await self._woken.wait()

    async def _settle(self, adoption: Adoption, mine: dict[int, Accepted]) -> None:
        """Put what was taken on the bus in journal order; recover what a gone replica had."""
        if adoption.claimed:
            self.taken_over += len(adoption.claimed)
            for channel in await self._placeholders.collect(adoption.claimed):
                finish = functools.partial(self._placeholders.finish, channel)
                self._spawn(f"recovery:{channel}", finish)
        left: list[JournalEntry] = []
        for adopted in adoption.entries:
            entry = adopted.entry
            if adopted.previous_owner is not None:
                left.append(entry)  # recovered together: one notice per interrupted turn
                continue
            await self._recover(left)
            if entry.id in mine:
                self._bus.put_reserved(mine[entry.id])
            else:
                self._bus.put_recovered(
                    Accepted(
                        entry_id=entry.id,
                        message=entry.message,
                        correlation_id=entry.correlation_id,
                    )
                )
        await self._recover(left)
        previous = {a.previous_owner for a in adoption.entries if a.previous_owner is not None}
        if previous:
            logger.info(
                "took over %d chat(s) and %d unfinished message(s) from %s",
                len(adoption.claimed),
                sum(a.previous_owner is not None for a in adoption.entries),
                ", ".join(sorted(previous)),
            )

    async def _recover(self, entries: list[JournalEntry]) -> None:
        if entries:
            await self._recover_left(list(entries))
            entries.clear()
