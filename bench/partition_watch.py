"""What ``bench/partition.py`` reads of the fleet's world while and after a fault: the store's
journal and outbox of a phase's chats, and what the chats show (answers, placeholders left with
the streaming cursor)."""

from __future__ import annotations

import time
from typing import Any

import psycopg
from psycopg import sql

from bench.replicas_load import CURSOR, answered
from bench.soak_model import MARKER
from tests.fakes.telegram_api import FakeTelegram

QUIET_S = 2.0
"""A phase is over once its chats had no new bot call for this long and nothing is pending."""


def query(url: str, statement: sql.SQL | sql.Composed, *args: object) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, connect_timeout=10, autocommit=True) as conn:
        return list(conn.execute(statement, args).fetchall())


def running(url: str, schema: str, owner: str, chats: list[int]) -> list[str]:
    """The questions whose turns ``owner`` is running, of ``chats``."""
    statement = sql.SQL(
        "SELECT message->>'text' FROM {}.inbound"
        " WHERE status = 'running' AND owner = %s AND chat_id = ANY(%s)"
    ).format(sql.Identifier(schema))
    rows = query(url, statement, owner, [str(c) for c in chats])
    return sorted(str(text).split()[0] for (text,) in rows if text)


def backlog(url: str, schema: str, chats: list[int]) -> int:
    """Unfinished journal entries and pending outbox rows of ``chats``."""
    ids = [str(c) for c in chats]
    statement = sql.SQL(
        "SELECT (SELECT count(*) FROM {schema}.inbound WHERE chat_id = ANY(%s)"
        " AND status IN ('accepted', 'running'))"
        " + (SELECT count(*) FROM {schema}.outbox WHERE chat_id = ANY(%s) AND state = 'pending')"
    ).format(schema=sql.Identifier(schema))
    return int(query(url, statement, ids, ids)[0][0])


def settle(fake: FakeTelegram, url: str, schema: str, chats: list[int], until: float) -> bool:
    """Waits until nothing is pending for ``chats`` and they had no bot call for ``QUIET_S``
    (late answers of a replica that lost its chats arrive here); False past ``until``."""
    wanted = {str(c) for c in chats}
    while time.monotonic() < until:
        last = max((c.at for c in fake.calls() if str(c.params.get("chat_id")) in wanted),
                   default=0.0)  # fmt: skip
        if time.monotonic() - last >= QUIET_S and backlog(url, schema, chats) == 0:
            return True
        time.sleep(0.25)
    return False


def left_placeholders(fake: FakeTelegram, chats: list[int], limit: int = 4) -> list[str]:
    """Bot messages of ``chats`` still showing the streaming cursor: a placeholder whose final
    edit never came (users see it beside the answer)."""
    found = [
        f"chat {chat} #{m.get('message_id')}: {str(m.get('text'))[:60]!r}"
        for chat in chats
        for m in fake.chat_messages(chat)
        if str(m.get("text") or "").endswith(CURSOR)
    ]
    return found[:limit]


def history(fake: FakeTelegram, chats: list[int], origin: float, limit: int = 40) -> list[str]:
    """The bot calls of the chats holding a left placeholder, from 2 s before ``origin`` (the
    fault's start) on, timed from it: what a failed phase is read from."""
    left = {
        str(chat)
        for chat in chats
        if any(str(m.get("text") or "").endswith(CURSOR) for m in fake.chat_messages(chat))
    }
    found = [
        f"{call.at - origin:+.2f}s {call.brief()}"
        for call in fake.calls()
        if str(call.params.get("chat_id")) in left and call.at >= origin - 2
    ]
    return found[:limit]


def shown_twice(fake: FakeTelegram, chats: list[int]) -> list[str]:
    """Questions whose answer stands in a chat twice: once as the final answer and once in a
    placeholder left with the cursor (its stream reached the answer's text, its final edit never
    came). Users read both, so they count as duplicates as seen."""
    found: set[str] = set()
    for chat in chats:
        final = set(answered(fake, chat))
        for message in fake.chat_messages(chat):
            text = str(message.get("text") or "")
            if text.endswith(CURSOR):
                found.update(m for m in markers(text) if m in final)
    return sorted(found)


def markers(text: str) -> list[str]:
    return [f"q{chat}-{index}" for chat, index in MARKER.findall(text)]


def schema_exists(url: str, schema: str) -> bool:
    statement = sql.SQL("SELECT 1 FROM information_schema.schemata WHERE schema_name = %s")
    rows = query(url, statement, schema)
    return bool(rows)
