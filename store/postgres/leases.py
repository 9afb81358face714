"""Chat leases on PostgreSQL: which replica holds which chat, and taking over the work of a
replica that is gone (design §11 "replicas").

A lease is a row of ``chat_leases`` naming its owner; it holds while the owner is live (its
``replicas`` heartbeat younger than the expiry), so nothing renews leases one by one and every
lease of a killed replica lapses together. ``adopt`` runs in one transaction: claim the chats
(an upsert that replaces only an owner that is not live), then mark the unfinished journal
entries of the chats now held as this replica's, skipping rows another transaction has locked
(``FOR UPDATE SKIP LOCKED``: whoever holds them takes them, or a later sweep does). Chats are
locked in sorted order, so two replicas adopting overlapping chats never deadlock.

Rebalancing moves a lease directly from its owner to another live replica (``hand_over``,
guarded by the owner), never through a release: with Telegram polling one replica receives
every message, and a released chat would go straight back to it. The move first locks the
owner's lease rows (an ``adopt`` of them finishes first), then checks in a statement of its
own, so with a fresh snapshot, that each chat is still idle: an entry ``adopt`` just took counts.

Replicas wake each other with NOTIFY on ``wake_channel`` (payload: the replica id, or ``*``);
``exclusive`` is a session advisory lock on a connection of its own, so it ends when the
process does, however it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Collection
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import psycopg
from psycopg import AsyncConnection
from typing_extensions import override

import store.postgres.lease_queries as q
from bot.ports import LeaseStore, NameLock
from bot.records import AdoptedEntry, Adoption, ChatRef
from store.codec import to_utc
from store.postgres.db import PgDatabase, PgSession, wake_channel
from store.postgres.dialect import PgColumns
from store.rows import journal_entry

logger = logging.getLogger(__name__)

EXCLUSIVE_RETRY_S: Final = 1.0
"""How often a replica waiting for an exclusive name asks again (the holder's death frees it
at once; this bounds how soon a standby notices)."""
EXCLUSIVE_CHECK_S: Final = 2.0
"""How often a held exclusive name's connection is checked."""
EVERYONE: Final = "*"


def _chat(cols: PgColumns) -> ChatRef:
    return ChatRef(cols.text("channel"), cols.text("account_id"), cols.text("chat_id"))


def _chat_params(chats: list[ChatRef]) -> dict[str, object]:
    return {
        "channels": [c.channel for c in chats],
        "accounts": [c.account_id for c in chats],
        "chats": [c.chat_id for c in chats],
    }


class PgHold(NameLock):
    def __init__(self) -> None:
        self._lost = asyncio.Event()

    @property
    @override
    def lost(self) -> bool:
        return self._lost.is_set()

    @override
    async def wait_lost(self) -> None:
        await self._lost.wait()

    def lose(self) -> None:
        self._lost.set()


class PgLeaseStore(LeaseStore):
    def __init__(self, db: PgDatabase) -> None:
        self._db = db
        self._known: dict[str, dict[ChatRef, tuple[datetime, int]]] = {}
        """Chats each replica of this process was seen to hold, as of when (``now``), with
        their tokens:
        ``adopt`` of only chats seen within half the expiry skips the claim. Older sightings
        are checked again, so a replica whose loop stalled past the expiry (its chats taken
        meanwhile) learns that it lost them within that time, not never."""

    @property
    @override
    def shared(self) -> bool:
        return True

    def _params(
        self, replica: str, now: datetime, expiry_s: float, *, fresh_start: bool
    ) -> dict[str, object]:
        return {
            "me": replica,
            "now": to_utc(now),
            "cutoff": to_utc(now) - timedelta(seconds=expiry_s),
            "fresh": fresh_start,
        }

    @override
    async def orphaned(
        self, replica: str, now: datetime, expiry_s: float, *, fresh_start: bool = False
    ) -> list[ChatRef]:
        params = self._params(replica, now, expiry_s, fresh_start=fresh_start)
        rows = await self._db.rows(q.ORPHANED, params)
        return sorted({_chat(PgColumns(row)) for row in rows}, key=_order)

    @override
    async def adopt(
        self,
        replica: str,
        now: datetime,
        expiry_s: float,
        chats: Collection[ChatRef] | None = None,
        *,
        fresh_start: bool = False,
    ) -> Adoption:
        params = self._params(replica, now, expiry_s, fresh_start=fresh_start)
        known = self._known.setdefault(replica, {})
        seen_since = now - timedelta(seconds=expiry_s / 2)
        if (
            chats is not None
            and not fresh_start
            and all(known.get(chat, _NEVER)[0] > seen_since for chat in chats)
        ):
            held = sorted(set(chats), key=_order)
            async with self._db.shared() as session:  # one statement: atomic on its own
                entries = await self._take(session, params | _chat_params(held))
            tokens = {chat: known[chat][1] for chat in held}
            return Adoption(
                held=frozenset(held), claimed=frozenset(), others={}, entries=entries, tokens=tokens
            )
        async with self._db.transaction() as tx:
            if chats is None:
                rows = await tx.rows(q.ORPHANED, params)
                chats = {_chat(PgColumns(row)) for row in rows}
            asked = sorted(set(chats), key=_order)
            if not asked:
                return Adoption(held=frozenset(), claimed=frozenset(), others={}, entries=())
            params |= _chat_params(asked)
            claimed = {_chat(PgColumns(row)) for row in await tx.rows(q.CLAIM, params)}
            holders = {
                _chat(cols): (cols.text("owner"), cols.integer("token"))
                for cols in map(PgColumns, await tx.rows(q.HOLDERS, params))
            }
            tokens = {c: token for c, (owner, token) in holders.items() if owner == replica}
            held = sorted(tokens, key=_order)
            others = {c: owner for c, (owner, _) in holders.items() if owner != replica}
            entries = await self._take(tx, params | _chat_params(held)) if held else ()
            await self._wake(tx, set(others.values()))
        known.update({chat: (now, token) for chat, token in tokens.items()})
        for chat in others:
            known.pop(chat, None)
        if fresh_start:
            claimed.update(held)
        return Adoption(
            held=frozenset(held),
            claimed=frozenset(claimed),
            others=others,
            entries=entries,
            tokens=tokens,
        )

    async def _take(self, tx: PgSession, params: dict[str, object]) -> tuple[AdoptedEntry, ...]:
        taken = [
            AdoptedEntry(entry=journal_entry(cols), previous_owner=cols.opt_text("previous_owner"))
            for cols in map(PgColumns, await tx.rows(q.TAKE, params))
        ]
        return tuple(sorted(taken, key=lambda adopted: adopted.entry.id))

    @override
    async def held(self, replica: str) -> int:
        row = await self._db.row(
            "SELECT count(*) AS n FROM chat_leases WHERE owner = ?", (replica,)
        )
        return 0 if row is None else PgColumns(row).integer("n")

    @override
    async def tokens(
        self, replica: str, chats: Collection[ChatRef] | None = None
    ) -> dict[ChatRef, int]:
        if chats is None:
            rows = await self._db.rows(q.TOKENS, {"me": replica})
        elif chats:
            params = {"me": replica} | _chat_params(sorted(set(chats), key=_order))
            rows = await self._db.rows(q.TOKENS_OF, params)
        else:
            return {}
        return {_chat(cols): cols.integer("token") for cols in map(PgColumns, rows)}

    @override
    async def release(self, replica: str) -> int:
        self._known.pop(replica, None)
        return await self._db.write("DELETE FROM chat_leases WHERE owner = ?", (replica,))

    @override
    async def loads(self, now: datetime, expiry_s: float) -> dict[str, int]:
        params = {"cutoff": to_utc(now) - timedelta(seconds=expiry_s)}
        rows = map(PgColumns, await self._db.rows(q.LOADS, params))
        return {cols.text("id"): cols.integer("n") for cols in rows}

    @override
    async def idle(self, replica: str, now: datetime, quiet_s: float, limit: int) -> list[ChatRef]:
        if limit <= 0:
            return []
        params = {"me": replica, "quiet": _quiet(now, quiet_s), "limit": limit}
        return [_chat(PgColumns(row)) for row in await self._db.rows(q.IDLE_HELD, params)]

    @override
    async def hand_over(
        self,
        replica: str,
        to: str,
        chats: Collection[ChatRef],
        *,
        now: datetime,
        expiry_s: float,
        quiet_s: float,
    ) -> list[ChatRef]:
        asked = sorted(set(chats), key=_order)
        if not asked or to == replica:
            return []
        known = self._known.get(replica, {})
        for chat in asked:  # before the move: an intake from now on claims, and sees the move
            known.pop(chat, None)
        params = self._params(replica, now, expiry_s, fresh_start=False) | _chat_params(asked)
        params |= {"to": to, "quiet": _quiet(now, quiet_s)}
        async with self._db.transaction() as tx:
            await tx.rows(q.LOCK_HELD, params)
            moved = [_chat(PgColumns(row)) for row in await tx.rows(q.HAND_OVER, params)]
            if moved:
                await self._wake(tx, {to})
        return sorted(moved, key=_order)

    @override
    async def wake(self, replica_ids: Collection[str]) -> None:
        if replica_ids:
            async with self._db.shared() as session:
                await self._wake(session, set(replica_ids))

    async def _wake(self, session: PgSession, replica_ids: set[str]) -> None:
        for replica in sorted(replica_ids):
            await session.execute(
                "SELECT pg_notify(?, ?)", (wake_channel(self._db.schema), replica)
            )

    @override
    def on_wake(self, replica: str, callback: Callable[[], None]) -> None:
        def note(payload: str) -> None:
            if payload in (replica, EVERYONE):
                callback()

        self._db.wake_listeners.append(note)

    @override
    @contextlib.asynccontextmanager
    async def exclusive(self, name: str) -> AsyncIterator[NameLock]:
        key = f"switchboard:exclusive:{self._db.schema}:{name}"
        conn = await self._locked(name, key)
        hold = PgHold()
        watch = asyncio.create_task(self._watch(conn, hold), name=f"store:exclusive:{name}")
        try:
            yield hold
        finally:
            watch.cancel()
            await asyncio.gather(watch, return_exceptions=True)
            with contextlib.suppress(psycopg.Error, OSError):
                await conn.close()

    async def _locked(self, name: str, key: str) -> AsyncConnection[Any]:
        """A connection holding the advisory lock on ``key``; waits (and reconnects) until
        the current holder lets go or dies."""
        waiting_logged = False
        while True:
            conn: AsyncConnection[Any] | None = None
            try:
                conn = await AsyncConnection.connect(
                    self._db.url, autocommit=True, **self._db.server.defaults
                )
                while True:
                    cursor = await conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (key,))
                    got = await cursor.fetchone()
                    if got is not None and got[0]:
                        logger.info("holding %s (exclusive across replicas)", name)
                        return conn
                    if not waiting_logged:
                        logger.info("%s is held by another replica: standing by", name)
                        waiting_logged = True
                    await asyncio.sleep(EXCLUSIVE_RETRY_S)
            except (psycopg.Error, OSError) as exc:
                logger.warning(
                    "waiting for %s: store %s unreachable (%s)",
                    name,
                    self._db.where,
                    self._db.server.scrub(str(exc)),
                )
                if conn is not None:
                    with contextlib.suppress(psycopg.Error, OSError):
                        await conn.close()
                await asyncio.sleep(EXCLUSIVE_RETRY_S)
            except BaseException:
                if conn is not None:
                    with contextlib.suppress(psycopg.Error, OSError):
                        await conn.close()
                raise

    async def _watch(self, conn: AsyncConnection[Any], hold: PgHold) -> None:
        try:
            while True:
                await asyncio.sleep(EXCLUSIVE_CHECK_S)
                await conn.execute("SELECT 1")
        except (psycopg.Error, OSError) as exc:
            logger.warning("lost an exclusive hold: %s", self._db.server.scrub(str(exc)))
            hold.lose()


_NEVER: Final = (datetime.min.replace(tzinfo=UTC), 0)


def _quiet(now: datetime, quiet_s: float) -> datetime:
    """Journal changes after this are too recent for the chat to count as idle."""
    return to_utc(now) - timedelta(seconds=quiet_s)


def _order(chat: ChatRef) -> tuple[str, str, str]:
    return (chat.channel, chat.account_id, chat.chat_id)
