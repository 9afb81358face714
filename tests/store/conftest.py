"""The store contract suite runs against every backend: each test that takes ``store`` (or
``make_store``) runs once on SQLite and once on PostgreSQL, in a schema of its own
(``tests.postgres``). Tests of one backend's own machinery live in ``test_sqlite_store.py``
and ``test_postgres_store.py``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from store.cache import OTHER_WRITERS_CHECK_S
from store.postgres import PostgresStore
from store.sqlite import SqliteStore
from tests.postgres import fresh_schema, require_postgres
from tests.store.support import BackendStore, ManualClock, StoreFactory, register

BACKENDS = ("sqlite", "postgres")


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "switchboard.db"


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
async def make_store(
    backend: str, db_path: Path, clock: ManualClock
) -> AsyncIterator[StoreFactory]:
    """Builds (without opening) a store on this test's state: the same SQLite file, or the
    same PostgreSQL schema, every time. A second one is the CLI beside the daemon, or the
    daemon after a restart."""
    if backend == "sqlite":

        def sqlite(
            *,
            other_writers_check_s: float = OTHER_WRITERS_CHECK_S,
            listen: bool = False,  # PostgreSQL's alone
        ) -> SqliteStore:
            return SqliteStore(db_path, clock=clock, other_writers_check_s=other_writers_check_s)

        yield sqlite
        return
    url = require_postgres()
    async with fresh_schema(url) as schema:

        def postgres(
            *, other_writers_check_s: float = OTHER_WRITERS_CHECK_S, listen: bool = False
        ) -> PostgresStore:
            return PostgresStore(
                url,
                schema=schema,
                clock=clock,
                other_writers_check_s=other_writers_check_s,
                listen=listen,
            )

        yield postgres


@pytest.fixture
async def store(make_store: StoreFactory) -> AsyncIterator[BackendStore]:
    async with make_store() as opened:
        yield opened


@pytest.fixture
async def pair(make_store: StoreFactory) -> AsyncIterator[tuple[BackendStore, BackendStore]]:
    """Two replicas, ``a`` and ``b``, live at ``START`` (for a module whose ``backend`` is
    PostgreSQL: leases are shared there)."""
    async with make_store() as a, make_store() as b:
        await register(a, "a")
        await register(b, "b")
        yield a, b
