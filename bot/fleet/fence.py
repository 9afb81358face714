"""Fencing: this replica acts for a chat only while it still holds the chat's lease (design §11).

A replica learns each chat's fencing token when it is granted the chat (``note``, from every
``LeaseStore.adopt``). Before a send for the chat (an outbox row, a progress edit, typing) it
asks the store whether the lease still names it with that token (``holds``), and a turn's
answer is recorded under the token (``grant`` → ``OutboxStore.enqueue_rows(fence=...)``),
checked in the same statement. A replica that stalled past the lease expiry (a pause, a
partition) and lost the chat meanwhile so finds out before it answers: it drops its work for
the chat (``on_lost``), logs it and counts it (``switchboard_fenced_total{what}``), and the
new holder answers. After each heartbeat the replica also compares all its tokens at once
(``verify``), so a stall is noticed within a beat even in a chat with nothing to send.

Only a chat the store no longer names this replica's counts as lost: a token that differs while
the lease is still this replica's (a grant cached from before a hand-over, or the chat lost and
granted back) is only learnt, because the chat's journal entries are in this replica's hands and
nobody else would ever run them if its work were dropped.

A lone daemon on a store that is not shared holds every chat: nothing is asked, nothing is
fenced, and no statement is added.

What remains is the send itself: a check passed just before a stall that outlasts the expiry
still lets that one call out after the takeover, the at-least-once window every send has.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable

from prometheus_client import Counter

from bot.errors import ChatLost
from bot.ports import LeaseStore
from bot.records import Adoption, ChatRef, LeaseFence

logger = logging.getLogger(__name__)

LostChats = Callable[[frozenset[ChatRef]], None]
"""Told of a set of chats (lost to, or taken from, another replica)."""


class ChatFence:
    def __init__(self, leases: LeaseStore, replica_id: str, fenced: Counter) -> None:
        self._leases = leases
        self._replica = replica_id
        self._fenced = fenced
        self._tokens: dict[ChatRef, int] = {}
        """The token of each chat this replica was granted and has not lost or handed on."""
        self.on_lost: list[LostChats] = []
        """Told of chats found lost: drop what is running or queued for them."""
        self.on_taken: list[LostChats] = []
        """Told of chats granted here that another replica held (what this process cached of
        them, their questions' askers say, is old)."""

    @property
    def shared(self) -> bool:
        return self._leases.shared

    def note(self, adoption: Adoption) -> None:
        """What an ``adopt`` found: the tokens of the chats held, and chats another holds."""
        if not self.shared:
            return
        if adoption.claimed:
            for callback in self.on_taken:
                callback(adoption.claimed)
        self._lose(set(adoption.others), "claim")
        self._tokens.update(adoption.tokens)

    def forget(self, chats: Iterable[ChatRef]) -> None:
        """Chats this replica hands on (rebalancing, a clean stop): not a loss."""
        for chat in chats:
            self._tokens.pop(chat, None)

    async def holds(self, chat: ChatRef, what: str) -> bool:
        """Whether this replica may send for ``chat`` now; ``False`` once it lost the chat
        (what it did for the chat is dropped) or when another replica holds it."""
        if not self.shared:
            return True
        return await self._current(chat, what) is not None

    async def grant(self, chat: ChatRef) -> LeaseFence | None:
        """The fence a turn's answer for ``chat`` is recorded under (``None``: not shared);
        ``ChatLost`` when the chat is no longer this replica's."""
        if not self.shared:
            return None
        token = await self._current(chat, "commit")
        if token is None:
            raise ChatLost(f"chat {chat.chat_id} is held by another replica")
        return LeaseFence(self._replica, chat, token)

    def lost(self, chat: ChatRef, what: str) -> None:
        """A fenced write failed (``ChatLost``): the chat is gone."""
        self._lose({chat}, what)

    async def verify(self) -> None:
        """Compare every token held with the store's (after a heartbeat: a stall is noticed
        within a beat, however quiet its chats)."""
        if not self.shared or not self._tokens:
            return
        known = dict(self._tokens)
        current = await self._leases.tokens(self._replica)
        # A grant noted while the store was asked is newer than what it said.
        gone = {c for c, t in known.items() if c not in current and self._tokens.get(c) == t}
        self._lose(gone, "verify")
        for chat, token in current.items():
            if chat in self._tokens:
                self._tokens[chat] = token

    async def _current(self, chat: ChatRef, what: str) -> int | None:
        """The chat's token if this replica holds it now (learnt here if it was handed the
        chat); ``None``, and the chat lost, if another does or nobody does."""
        token = (await self._leases.tokens(self._replica, [chat])).get(chat)
        if token is None:
            self._lose({chat}, what)
            return None
        self._tokens[chat] = token
        return token

    def _lose(self, chats: Collection[ChatRef], what: str) -> None:
        lost = frozenset(chat for chat in chats if chat in self._tokens)
        for chat in chats:
            self._tokens.pop(chat, None)
        if not lost:
            return
        self._fenced.labels(what=what).inc(len(lost))
        logger.warning(
            "lost %d chat(s) to another replica (found at %s): %s; dropping their work",
            len(lost),
            what,
            ", ".join(sorted(f"{c.channel}:{c.chat_id}" for c in lost)),
        )
        for callback in self.on_lost:
            callback(lost)
