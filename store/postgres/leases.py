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

from bot.ports import Hold, LeaseStore
from bot.records import UNFINISHED_INBOUND, AdoptedEntry, Adoption, ChatRef
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

_UNFINISHED: Final = "i.status IN ({})".format(", ".join(f"'{s}'" for s in UNFINISHED_INBOUND))
_LIVE: Final = (
    "EXISTS (SELECT 1 FROM replicas r WHERE r.id = {owner} AND r.heartbeat_at > %(cutoff)s)"
)
_NOT_IN_HAND: Final = (
    f"(i.owner IS NULL OR (i.owner <> %(me)s AND NOT {_LIVE.format(owner='i.owner')})"
    " OR (%(fresh)s AND i.owner = %(me)s))"
)
"""An unfinished entry no live replica has in hand (this one's own id counts as gone after a
fresh start)."""
_SAME_CHAT: Final = (
    "l.channel = {t}.channel AND l.account_id = {t}.account_id AND l.chat_id = {t}.chat_id"
)
_ORPHANED: Final = (
    f"SELECT i.channel, i.account_id, i.chat_id FROM inbound i WHERE {_UNFINISHED}"  # noqa: S608 - constant fragments; values are parameters
    f" AND {_NOT_IN_HAND}"
    f" AND NOT EXISTS (SELECT 1 FROM chat_leases l WHERE {_SAME_CHAT.format(t='i')}"
    f" AND l.owner <> %(me)s AND {_LIVE.format(owner='l.owner')})"
    " UNION"
    " SELECT o.channel, o.account_id, o.chat_id FROM outbox o WHERE o.state = 'pending'"
    f" AND NOT EXISTS (SELECT 1 FROM chat_leases l WHERE {_SAME_CHAT.format(t='o')}"
    f" AND {_LIVE.format(owner='l.owner')} AND NOT (%(fresh)s AND l.owner = %(me)s))"
)
_CHATS: Final = (
    "unnest(%(channels)s::text[], %(accounts)s::text[], %(chats)s::text[])"
    " AS c(channel, account_id, chat_id)"
)
_CLAIM: Final = (
    "INSERT INTO chat_leases AS l (channel, account_id, chat_id, owner, since)"  # noqa: S608 - constant fragments; values are parameters
    f" SELECT c.channel, c.account_id, c.chat_id, %(me)s, %(now)s FROM {_CHATS}"
    " ON CONFLICT (channel, account_id, chat_id) DO UPDATE"
    " SET owner = excluded.owner, since = excluded.since"
    f" WHERE l.owner <> excluded.owner AND NOT {_LIVE.format(owner='l.owner')}"
    " RETURNING l.channel, l.account_id, l.chat_id"
)
_HOLDERS: Final = (
    f"SELECT l.channel, l.account_id, l.chat_id, l.owner FROM chat_leases l JOIN {_CHATS}"  # noqa: S608 - constant fragments; values are parameters
    f" ON {_SAME_CHAT.format(t='c')}"
)
_IDLE: Final = (
    "NOT EXISTS (SELECT 1 FROM inbound i"  # noqa: S608 - constant fragments; values are parameters
    f" WHERE {_SAME_CHAT.format(t='i')} AND {_UNFINISHED})"
    f" AND NOT EXISTS (SELECT 1 FROM inbound i WHERE {_SAME_CHAT.format(t='i')}"
    " AND i.updated_at > %(quiet)s)"
    f" AND NOT EXISTS (SELECT 1 FROM outbox o WHERE {_SAME_CHAT.format(t='o')}"
    " AND o.state = 'pending')"
    f" AND NOT EXISTS (SELECT 1 FROM clarifications q WHERE {_SAME_CHAT.format(t='q')}"
    " AND q.state = 'pending')"
)
"""Nothing of the chat ``l`` is in flight anywhere: no message waiting, queued or running (on
any replica), none finished within the quiet time (a turn's last effects follow its mark), no
reply waiting to be sent or being sent, no question waiting for its answer."""
_IDLE_HELD: Final = (
    "SELECT l.channel, l.account_id, l.chat_id FROM chat_leases l"  # noqa: S608 - constant fragments; values are parameters
    f" WHERE l.owner = %(me)s AND {_IDLE}"
    " ORDER BY l.since, l.channel, l.account_id, l.chat_id LIMIT %(limit)s"
)
_LOCK_HELD: Final = (
    f"SELECT 1 FROM chat_leases l JOIN {_CHATS} ON {_SAME_CHAT.format(t='c')}"  # noqa: S608 - constant fragments; values are parameters
    " WHERE l.owner = %(me)s"
    " ORDER BY l.channel, l.account_id, l.chat_id FOR UPDATE OF l"
)
_HAND_OVER: Final = (
    "UPDATE chat_leases l SET owner = %(to)s, since = %(now)s"  # noqa: S608 - constant fragments; values are parameters
    f" FROM {_CHATS} WHERE {_SAME_CHAT.format(t='c')} AND l.owner = %(me)s"
    f" AND {_LIVE.format(owner='%(to)s')} AND {_IDLE}"
    " RETURNING l.channel, l.account_id, l.chat_id"
)
_LOADS: Final = (
    "SELECT r.id, count(l.owner) AS n FROM replicas r"
    " LEFT JOIN chat_leases l ON l.owner = r.id"
    " WHERE r.heartbeat_at > %(cutoff)s GROUP BY r.id"
)
_TAKE: Final = (
    "WITH old AS (SELECT i.id, i.owner FROM inbound i"  # noqa: S608 - constant fragments; values are parameters
    f" JOIN {_CHATS} ON i.channel = c.channel AND i.account_id = c.account_id"
    f" AND i.chat_id = c.chat_id WHERE {_UNFINISHED} AND {_NOT_IN_HAND}"
    " FOR UPDATE OF i SKIP LOCKED)"
    " UPDATE inbound SET owner = %(me)s FROM old WHERE inbound.id = old.id"
    " RETURNING inbound.*, old.owner AS previous_owner"
)


def _chat(cols: PgColumns) -> ChatRef:
    return ChatRef(cols.text("channel"), cols.text("account_id"), cols.text("chat_id"))


def _chat_params(chats: list[ChatRef]) -> dict[str, object]:
    return {
        "channels": [c.channel for c in chats],
        "accounts": [c.account_id for c in chats],
        "chats": [c.chat_id for c in chats],
    }


class PgHold(Hold):
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
        self._known: dict[str, dict[ChatRef, datetime]] = {}
        """Chats each replica of this process was seen to hold, and as of when (``now``):
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
        rows = await self._db.rows(_ORPHANED, params)
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
            and all(
                known.get(chat, datetime.min.replace(tzinfo=UTC)) > seen_since for chat in chats
            )
        ):
            held = sorted(set(chats), key=_order)
            async with self._db.shared() as session:  # one statement: atomic on its own
                entries = await self._take(session, params | _chat_params(held))
            return Adoption(held=frozenset(held), claimed=frozenset(), others={}, entries=entries)
        async with self._db.transaction() as tx:
            if chats is None:
                rows = await tx.rows(_ORPHANED, params)
                chats = {_chat(PgColumns(row)) for row in rows}
            asked = sorted(set(chats), key=_order)
            if not asked:
                return Adoption(held=frozenset(), claimed=frozenset(), others={}, entries=())
            params |= _chat_params(asked)
            claimed = {_chat(PgColumns(row)) for row in await tx.rows(_CLAIM, params)}
            holders = {
                _chat(cols): cols.text("owner")
                for cols in map(PgColumns, await tx.rows(_HOLDERS, params))
            }
            held = sorted((c for c, owner in holders.items() if owner == replica), key=_order)
            others = {c: owner for c, owner in holders.items() if owner != replica}
            entries = await self._take(tx, params | _chat_params(held)) if held else ()
            await self._wake(tx, set(others.values()))
        known.update(dict.fromkeys(held, now))
        for chat in others:
            known.pop(chat, None)
        if fresh_start:
            claimed.update(held)
        return Adoption(
            held=frozenset(held), claimed=frozenset(claimed), others=others, entries=entries
        )

    async def _take(self, tx: PgSession, params: dict[str, object]) -> tuple[AdoptedEntry, ...]:
        taken = [
            AdoptedEntry(entry=journal_entry(cols), previous_owner=cols.opt_text("previous_owner"))
            for cols in map(PgColumns, await tx.rows(_TAKE, params))
        ]
        return tuple(sorted(taken, key=lambda adopted: adopted.entry.id))

    @override
    async def held(self, replica: str) -> int:
        row = await self._db.row(
            "SELECT count(*) AS n FROM chat_leases WHERE owner = ?", (replica,)
        )
        return 0 if row is None else PgColumns(row).integer("n")

    @override
    async def release(self, replica: str) -> int:
        self._known.pop(replica, None)
        return await self._db.write("DELETE FROM chat_leases WHERE owner = ?", (replica,))

    @override
    async def loads(self, now: datetime, expiry_s: float) -> dict[str, int]:
        params = {"cutoff": to_utc(now) - timedelta(seconds=expiry_s)}
        rows = map(PgColumns, await self._db.rows(_LOADS, params))
        return {cols.text("id"): cols.integer("n") for cols in rows}

    @override
    async def idle(self, replica: str, now: datetime, quiet_s: float, limit: int) -> list[ChatRef]:
        if limit <= 0:
            return []
        params = {"me": replica, "quiet": _quiet(now, quiet_s), "limit": limit}
        return [_chat(PgColumns(row)) for row in await self._db.rows(_IDLE_HELD, params)]

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
            await tx.rows(_LOCK_HELD, params)
            moved = [_chat(PgColumns(row)) for row in await tx.rows(_HAND_OVER, params)]
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
    async def exclusive(self, name: str) -> AsyncIterator[Hold]:
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
                    name, self._db.where, self._db.server.scrub(str(exc)),
                )  # fmt: skip
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


def _quiet(now: datetime, quiet_s: float) -> datetime:
    """Journal changes after this are too recent for the chat to count as idle."""
    return to_utc(now) - timedelta(seconds=quiet_s)


def _order(chat: ChatRef) -> tuple[str, str, str]:
    return (chat.channel, chat.account_id, chat.chat_id)
