"""The PostgreSQL side of ``bench/replicas.py``: a fresh schema per fleet (dropped however the
run ends), and what the store says about replicas and chat leases. Blocking calls, each with a
connect timeout."""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Iterator

import psycopg
from psycopg import sql


def check_server(url: str) -> None:
    """Raises ``RuntimeError`` saying why the server cannot be used."""
    try:
        with psycopg.connect(url, connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        raise RuntimeError(f"PostgreSQL at {url} is unreachable: {exc}") from None


@contextlib.contextmanager
def fresh_schema(url: str, prefix: str) -> Iterator[str]:
    """A schema name nobody uses (the store creates it); dropped afterwards, whatever happened."""
    schema = f"{prefix}_{secrets.token_hex(5)}"
    try:
        yield schema
    finally:
        drop_schema(url, schema)


def drop_schema(url: str, schema: str) -> None:
    with psycopg.connect(url, connect_timeout=10, autocommit=True) as conn:
        conn.execute("SET lock_timeout = '20s'")
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def leases(url: str, schema: str) -> dict[int, str]:
    """Which replica id holds which chat (Telegram chat id → owner)."""
    query = sql.SQL("SELECT chat_id, owner FROM {}.chat_leases").format(sql.Identifier(schema))
    with psycopg.connect(url, connect_timeout=10, autocommit=True) as conn:
        return {int(chat): str(owner) for chat, owner in conn.execute(query).fetchall()}


def replica_ids(url: str, schema: str) -> dict[int, str]:
    """The registered replicas' ids by pid."""
    query = sql.SQL("SELECT pid, id FROM {}.replicas").format(sql.Identifier(schema))
    with psycopg.connect(url, connect_timeout=10, autocommit=True) as conn:
        return {int(pid): str(rid) for pid, rid in conn.execute(query).fetchall()}


class HeartbeatWatch:
    """One replica's heartbeat age, on a connection of its own, asked at most every
    ``every_s`` (``fresh`` is meant to be polled in a loop)."""

    def __init__(self, url: str, schema: str, replica: str, every_s: float = 0.05) -> None:
        self._query = sql.SQL(
            "SELECT extract(epoch FROM clock_timestamp() - heartbeat_at) FROM {}.replicas"
            " WHERE id = %s"
        ).format(sql.Identifier(schema))
        self._replica = replica
        self._every_s = every_s
        self._asked = 0.0
        self._last: float | None = None
        self._conn = psycopg.connect(url, connect_timeout=10, autocommit=True)

    def __enter__(self) -> HeartbeatWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self._conn.close()

    def age(self) -> float | None:
        """Seconds since the replica last moved its heartbeat (None: it has no row)."""
        row = self._conn.execute(self._query, (self._replica,)).fetchone()
        self._asked = time.monotonic()
        self._last = None if row is None else float(row[0])
        return self._last

    def fresh(self, within_s: float) -> bool:
        """Whether the heartbeat moved less than ``within_s`` ago."""
        if time.monotonic() - self._asked >= self._every_s:
            self.age()
        return self._last is not None and self._last < within_s
