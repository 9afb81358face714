"""The PostgreSQL server tests run against, and a schema of its own for each test.

The server is the one ``SWITCHBOARD_TEST_POSTGRES_URL`` names, else the local one on
127.0.0.1:5432 (``scripts/test`` starts it, installing it where it can). A test that needs it
and cannot reach it fails and says why; it skips only when ``SWITCHBOARD_SKIP_POSTGRES=1``
asks for that explicitly, so a PostgreSQL test never skips silently in CI.

Each test works in a fresh schema with a random name, dropped (with everything in it)
afterwards, so tests never see each other's rows and may run against a shared server.
"""

from __future__ import annotations

import functools
import os
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Final

import psycopg
import pytest
from psycopg import sql

from store.postgres.server import Server

URL_VARIABLE: Final = "SWITCHBOARD_TEST_POSTGRES_URL"
SKIP_VARIABLE: Final = "SWITCHBOARD_SKIP_POSTGRES"
DEFAULT_URL: Final = "postgresql://postgres@127.0.0.1:5432/test"


def server_url() -> str:
    """The test server's URL (not checked)."""
    return os.environ.get(URL_VARIABLE) or DEFAULT_URL


@functools.cache
def _problem(url: str) -> str | None:
    """Why the server cannot be used (``None``: it can); asked once per test run."""
    try:
        with psycopg.connect(url, connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        return Server.parse(url).scrub(str(exc))
    return None


def require_postgres() -> str:
    """The test server's URL; fails the calling test when it is unreachable. With
    ``SWITCHBOARD_SKIP_POSTGRES=1`` the test is skipped instead, without asking the server."""
    if os.environ.get(SKIP_VARIABLE) == "1":
        pytest.skip(f"{SKIP_VARIABLE}=1: the PostgreSQL tests are skipped on purpose")
    url = server_url()
    problem = _problem(url)
    if problem is None:
        return url
    where = Server.parse(url).url_for_logs
    pytest.fail(
        f"PostgreSQL at {where} is unreachable: {problem}\n"
        f"Start it (scripts/test does), point {URL_VARIABLE} at a server, or set"
        f" {SKIP_VARIABLE}=1 to skip the PostgreSQL tests on purpose.",
        pytrace=False,
    )


async def drop_schema(url: str, schema: str) -> None:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(
            sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
        )


@asynccontextmanager
async def fresh_schema(url: str, prefix: str = "t") -> AsyncIterator[str]:
    """The name of a schema no other test uses (not created: the store creates it); dropped
    afterwards, whatever the test left in it."""
    schema = f"{prefix}_{secrets.token_hex(6)}"
    try:
        yield schema
    finally:
        await drop_schema(url, schema)
