"""The statements of ``PgLeaseStore`` (``store/postgres/leases.py``): which chats are left
without a live holder, claiming them, taking their unfinished entries, the idle rule of a
hand-over, and the fencing tokens of each grant."""

from __future__ import annotations

from typing import Final

from bot.records import UNFINISHED_INBOUND

UNFINISHED: Final = "i.status IN ({})".format(", ".join(f"'{s}'" for s in UNFINISHED_INBOUND))
LIVE: Final = (
    "EXISTS (SELECT 1 FROM replicas r WHERE r.id = {owner} AND r.heartbeat_at > %(cutoff)s)"
)
NOT_IN_HAND: Final = (
    f"(i.owner IS NULL OR (i.owner <> %(me)s AND NOT {LIVE.format(owner='i.owner')})"  # noqa: S608 - constant fragments; values are parameters
    " OR (i.owner <> %(me)s AND i.recorded_at < %(cutoff)s AND NOT EXISTS (SELECT 1"
    " FROM chat_leases h"
    " WHERE h.channel = i.channel AND h.account_id = i.account_id AND h.chat_id = i.chat_id"
    " AND h.owner = i.owner))"
    " OR (%(fresh)s AND i.owner = %(me)s))"
)
"""An unfinished entry no live replica has in hand: its owner is gone, or no longer holds the
entry's chat (it lost the chat while it stalled, and a takeover could not take the entry: the
stalled replica had it locked, ``SKIP LOCKED``; fenced, it drops its work for the chat, so the
entry is the holder's to run) — once the entry is older than the expiry: a live replica that
has just journaled a message claims its chat in the next statement, and a sweep in between must
not take it (the message would be answered by a replica it did not reach). This one's own id
counts as gone after a fresh start."""
SAME_CHAT: Final = (
    "l.channel = {t}.channel AND l.account_id = {t}.account_id AND l.chat_id = {t}.chat_id"
)
ORPHANED: Final = (
    f"SELECT i.channel, i.account_id, i.chat_id FROM inbound i WHERE {UNFINISHED}"  # noqa: S608 - constant fragments; values are parameters
    f" AND {NOT_IN_HAND}"
    f" AND NOT EXISTS (SELECT 1 FROM chat_leases l WHERE {SAME_CHAT.format(t='i')}"
    f" AND l.owner <> %(me)s AND {LIVE.format(owner='l.owner')})"
    " UNION"
    " SELECT o.channel, o.account_id, o.chat_id FROM outbox o WHERE o.state = 'pending'"
    f" AND NOT EXISTS (SELECT 1 FROM chat_leases l WHERE {SAME_CHAT.format(t='o')}"
    f" AND {LIVE.format(owner='l.owner')} AND NOT (%(fresh)s AND l.owner = %(me)s))"
)
CHATS: Final = (
    "unnest(%(channels)s::text[], %(accounts)s::text[], %(chats)s::text[])"
    " AS c(channel, account_id, chat_id)"
)
CLAIM: Final = (
    "INSERT INTO chat_leases AS l (channel, account_id, chat_id, owner, since)"  # noqa: S608 - constant fragments; values are parameters
    f" SELECT c.channel, c.account_id, c.chat_id, %(me)s, %(now)s FROM {CHATS}"
    " ON CONFLICT (channel, account_id, chat_id) DO UPDATE"
    " SET owner = excluded.owner, since = excluded.since, token = nextval('chat_lease_tokens')"
    f" WHERE l.owner <> excluded.owner AND NOT {LIVE.format(owner='l.owner')}"
    " RETURNING l.channel, l.account_id, l.chat_id"
)
"""A new row takes its token from the column's default, a replaced owner the next one."""
HOLDERS: Final = (
    "SELECT l.channel, l.account_id, l.chat_id, l.owner, l.token"  # noqa: S608 - constant fragments; values are parameters
    f" FROM chat_leases l JOIN {CHATS}"
    f" ON {SAME_CHAT.format(t='c')}"
)
IDLE: Final = (
    "NOT EXISTS (SELECT 1 FROM inbound i"  # noqa: S608 - constant fragments; values are parameters
    f" WHERE {SAME_CHAT.format(t='i')} AND {UNFINISHED})"
    f" AND NOT EXISTS (SELECT 1 FROM inbound i WHERE {SAME_CHAT.format(t='i')}"
    " AND i.updated_at > %(quiet)s)"
    f" AND NOT EXISTS (SELECT 1 FROM outbox o WHERE {SAME_CHAT.format(t='o')}"
    " AND o.state = 'pending')"
    f" AND NOT EXISTS (SELECT 1 FROM clarifications q WHERE {SAME_CHAT.format(t='q')}"
    " AND q.state = 'pending')"
)
"""Nothing of the chat ``l`` is in flight anywhere: no message waiting, queued or running (on
any replica), none finished within the quiet time (a turn's last effects follow its mark), no
reply waiting to be sent or being sent, no question waiting for its answer."""
IDLE_HELD: Final = (
    "SELECT l.channel, l.account_id, l.chat_id FROM chat_leases l"  # noqa: S608 - constant fragments; values are parameters
    f" WHERE l.owner = %(me)s AND {IDLE}"
    " ORDER BY l.since, l.channel, l.account_id, l.chat_id LIMIT %(limit)s"
)
LOCK_HELD: Final = (
    f"SELECT 1 FROM chat_leases l JOIN {CHATS} ON {SAME_CHAT.format(t='c')}"  # noqa: S608 - constant fragments; values are parameters
    " WHERE l.owner = %(me)s"
    " ORDER BY l.channel, l.account_id, l.chat_id FOR UPDATE OF l"
)
HAND_OVER: Final = (
    "UPDATE chat_leases l SET owner = %(to)s, since = %(now)s,"  # noqa: S608 - constant fragments; values are parameters
    " token = nextval('chat_lease_tokens')"
    f" FROM {CHATS} WHERE {SAME_CHAT.format(t='c')} AND l.owner = %(me)s"
    f" AND {LIVE.format(owner='%(to)s')} AND {IDLE}"
    " RETURNING l.channel, l.account_id, l.chat_id"
)
TOKENS: Final = "SELECT channel, account_id, chat_id, token FROM chat_leases WHERE owner = %(me)s"
TOKENS_OF: Final = (
    f"SELECT l.channel, l.account_id, l.chat_id, l.token FROM chat_leases l JOIN {CHATS}"  # noqa: S608 - constant fragments; values are parameters
    f" ON {SAME_CHAT.format(t='c')} WHERE l.owner = %(me)s"
)
LOADS: Final = (
    "SELECT r.id, count(l.owner) AS n FROM replicas r"
    " LEFT JOIN chat_leases l ON l.owner = r.id"
    " WHERE r.heartbeat_at > %(cutoff)s GROUP BY r.id"
)
TAKE: Final = (
    "WITH old AS (SELECT i.id, i.owner FROM inbound i"  # noqa: S608 - constant fragments; values are parameters
    f" JOIN {CHATS} ON i.channel = c.channel AND i.account_id = c.account_id"
    f" AND i.chat_id = c.chat_id WHERE {UNFINISHED} AND {NOT_IN_HAND}"
    " FOR UPDATE OF i SKIP LOCKED)"
    " UPDATE inbound SET owner = %(me)s FROM old WHERE inbound.id = old.id"
    " RETURNING inbound.*, old.owner AS previous_owner"
)
