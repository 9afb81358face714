"""Muting conversations (design §22): the one place ``/mute``, ``/unmute``, a
yield to a human and the agent's handoff go through, so each mute is audited the same way,
and the router's question "is this conversation muted?".

Every replica reads mutes from the store, never from memory alone: the router asks a
snapshot of all active mutes (there are few) at most ``SNAPSHOT_TTL_S`` old, so a message costs
no query, a mute made on another replica holds here within that time, and a mute made here
holds at once (its change drops the snapshot), as does one made by the replica a chat was just
taken from (taking a chat drops it too). A chat-wide mute (no topic, no member)
mutes every conversation in the chat.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from bot.config.durations import describe_duration
from bot.messages import ConversationKey, utc_now
from bot.ports import Store
from bot.ports.mutes import Mute, chat_key, mutes_of
from bot.records import ChatRef

logger = logging.getLogger(__name__)

SNAPSHOT_TTL_S = 2.0
"""How stale the router's view of the store's mutes may be (a mute another replica made)."""


class MutesOff(Exception):
    """The store keeps no mutes (a custom store)."""


class MuteBook:
    def __init__(
        self,
        store: Store,
        clock: Callable[[], datetime] = utc_now,
        snapshot_ttl_s: float = SNAPSHOT_TTL_S,
    ) -> None:
        self._store = store
        self._table = mutes_of(store)
        """Resolved once: the router asks on every addressed message."""
        self._clock = clock
        self._ttl_s = snapshot_ttl_s
        self._snapshot: dict[ConversationKey, Mute] | None = None
        self._taken_at = 0.0
        self._changes = 0
        """Counts this process's changes: a snapshot read across one is not kept."""

    @property
    def available(self) -> bool:
        return self._table is not None

    async def mute(
        self, key: ConversationKey, *, length: timedelta | None, reason: str, actor: str
    ) -> Mute:
        """Mute ``key`` for ``length`` (``None``: until ``/unmute``), replacing its mute."""
        table = self._table
        if table is None:
            raise MutesOff
        now = self._clock()
        mute = Mute(
            key=key,
            until=None if length is None else now + length,
            reason=reason,
            muted_by=actor,
            muted_at=now,
        )
        await table.purge(now)
        await table.put(mute)
        self._changed()
        span = "until /unmute" if length is None else f"for {describe_duration(length)}"
        await self._store.audit.record(actor, "mute", f"{key.describe()} {span}: {reason}")
        logger.info("muted key=%s %s by=%s reason=%s", key.describe(), span, actor, reason)
        return mute

    async def unmute(self, key: ConversationKey, actor: str) -> Mute | None:
        """Lift ``key``'s own mute; the one lifted (``None``: it had none in force)."""
        table = self._table
        if table is None:
            raise MutesOff
        lifted = await table.lift(key)
        self._changed()
        if lifted is None or not lifted.active(self._clock()):
            return None
        await self._store.audit.record(actor, "unmute", key.describe())
        logger.info("unmuted key=%s by=%s", key.describe(), actor)
        return lifted

    async def mute_over(self, key: ConversationKey) -> Mute | None:
        """The mute in force on ``key`` or on its whole chat, if any."""
        if self._table is None:
            return None
        snapshot = await self._fresh()
        now = self._clock()
        for candidate in (key, chat_key(key)):
            found = snapshot.get(candidate)
            if found is not None and found.active(now):
                return found
        return None

    async def listed(self) -> list[Mute]:
        table = self._table
        return [] if table is None else await table.active(self._clock())

    def chats_taken(self, chats: frozenset[ChatRef]) -> None:
        """Chats this replica took from another: a mute made there just before is read anew
        (the snapshot may predate it), not up to ``SNAPSHOT_TTL_S`` late."""
        del chats
        self._changed()

    def _changed(self) -> None:
        self._snapshot = None
        self._changes += 1

    async def _fresh(self) -> dict[ConversationKey, Mute]:
        snapshot = self._snapshot
        if snapshot is None or time.monotonic() - self._taken_at >= self._ttl_s:
            changes = self._changes
            snapshot = {mute.key: mute for mute in await self.listed()}
            if changes == self._changes:
                self._snapshot, self._taken_at = snapshot, time.monotonic()
        return snapshot


def describe_mute(mute: Mute) -> str:
    """``muted until 14:30 UTC by slack:U1 (/mute)`` for chat replies and status."""
    until = "until /unmute" if mute.until is None else f"until {mute.until:%Y-%m-%d %H:%M} UTC"
    return f"muted {until} by {mute.muted_by} ({mute.reason})"
