"""PostgresStore's own machinery: the schema it lives in, migrations under an advisory lock,
errors (transient or not, never showing the password), and two stores on one schema racing
for the same rows. (What every backend does is in the contract modules beside this one.)"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from datetime import timedelta

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg.rows import TupleRow

from bot.errors import ConfigError, StoreBusy, StoreError
from bot.records import OutboxState, PairingRequest, UserStatus
from store.postgres import PostgresStore, migrate
from store.postgres.schema import latest_version, load_migrations
from tests.postgres import fresh_schema, require_postgres
from tests.store.support import (
    START,
    BackendStore,
    ManualClock,
    StoreFactory,
    enqueue,
    inbound,
    item,
    key,
    record,
)

TABLES = {
    "schema_version",
    "inbound",
    "conversations",
    "message_links",
    "outbox",
    "delivery_attempts",
    "clarifications",
    "users",
    "pairing_requests",
    "audit",
    "settings",
    "write_probe",
    "cache_writes",
}
Conn = psycopg.AsyncConnection[TupleRow]
PASSWORD = "s3cret-Pa55"  # noqa: S105 - made up, to see that it is never shown


@pytest.fixture
def backend() -> str:
    """Every test here is about PostgreSQL alone."""
    return "postgres"


@pytest.fixture
def url() -> str:
    return require_postgres()


@pytest.fixture
async def admin(url: str) -> AsyncIterator[Conn]:
    """A plain connection of the test's own, outside any store."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        yield conn


async def _scalar(conn: Conn, query: sql.Composed) -> object:
    cursor = await conn.execute(query)
    found = await cursor.fetchone()
    assert found is not None
    return found[0]


async def _tables(conn: Conn, schema: str) -> set[str]:
    cursor = await conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,)
    )
    return {str(row[0]) for row in await cursor.fetchall()}


async def _versions(conn: Conn, schema: str) -> list[int]:
    cursor = await conn.execute(
        sql.SQL("SELECT version FROM {} ORDER BY version").format(
            sql.Identifier(schema, "schema_version")
        )
    )
    return [int(str(row[0])) for row in await cursor.fetchall()]


def _pairing(code: str) -> PairingRequest:
    return PairingRequest(
        channel="telegram", user_id="u1", display_name="Ada", chat_id="c1", code=code,
        created_at=START, expires_at=START + timedelta(hours=1),
    )  # fmt: skip


# --------------------------------------------------------------------------- schema


def test_migrations_are_numbered_from_one_without_gaps() -> None:
    migrations = load_migrations()
    assert [m.version for m in migrations] == list(range(1, len(migrations) + 1))
    assert latest_version() == migrations[-1].version
    assert all(len(m.statements) == 1 for m in migrations)  # each script is sent whole


async def test_open_creates_the_schema_with_every_table_and_nothing_elsewhere(
    store: BackendStore, admin: Conn
) -> None:
    assert isinstance(store, PostgresStore)
    assert await _tables(admin, store.schema) == TABLES
    assert await _versions(admin, store.schema) == list(range(1, latest_version() + 1))
    assert not TABLES & await _tables(admin, "public")


async def test_two_schemas_in_one_database_do_not_see_each_other(
    url: str, clock: ManualClock
) -> None:
    async with (
        fresh_schema(url) as one,
        fresh_schema(url) as two,
        PostgresStore(url, schema=one, clock=clock) as first,
        PostgresStore(url, schema=two, clock=clock) as second,
    ):
        assert await record(first, inbound("m1"), "c") is not None
        assert await record(second, inbound("m1"), "c") is not None
        await first.settings.set("paused", "1")
        assert await second.settings.get("paused") is None


async def test_a_schema_the_operator_made_is_used_as_it_is(url: str, admin: Conn) -> None:
    async with fresh_schema(url) as schema:
        await admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        async with PostgresStore(url, schema=schema) as store:
            assert await store.writable()
        assert await _tables(admin, schema) == TABLES


async def test_migrate_applies_once_and_then_has_nothing_to_do(url: str, admin: Conn) -> None:
    async with fresh_schema(url) as schema:
        assert await migrate(url, schema) == list(range(1, latest_version() + 1))
        assert await migrate(url, schema) == []
        async with PostgresStore(url, schema=schema) as store:
            assert await store.writable()
        assert await _versions(admin, schema) == list(range(1, latest_version() + 1))


async def test_stores_opening_together_migrate_once_and_all_open(url: str, admin: Conn) -> None:
    async with fresh_schema(url) as schema:
        stores = [PostgresStore(url, schema=schema, pool_size=1) for _ in range(4)]
        try:
            await asyncio.gather(*(store.open() for store in stores))
            assert all([await store.writable() for store in stores])
        finally:
            await asyncio.gather(*(store.aclose() for store in stores))
        assert await _versions(admin, schema) == list(range(1, latest_version() + 1))


async def test_a_newer_schema_is_refused_and_left_alone(
    store: BackendStore,
    make_store: StoreFactory,
    admin: Conn,
) -> None:
    assert isinstance(store, PostgresStore)
    newer = latest_version() + 1
    await admin.execute(
        sql.SQL("INSERT INTO {} (version, name) VALUES (%s, 'future.sql')").format(
            sql.Identifier(store.schema, "schema_version")
        ),
        (newer,),
    )
    for opening in ("open", "open_existing"):
        other = make_store()
        expected = f"database schema version {newer} is newer than this Switchboard"
        with pytest.raises(StoreError, match=expected) as caught:
            await getattr(other, opening)()
        assert store.schema in str(caught.value)
        assert not await other.writable()
    assert (await _versions(admin, store.schema))[-1] == newer


async def test_open_existing_never_creates_the_schema(url: str, admin: Conn) -> None:
    async with fresh_schema(url) as schema:
        store = PostgresStore(url, schema=schema)
        with pytest.raises(StoreError, match="no Switchboard store in schema"):
            await store.open_existing()
        assert not await store.writable()
        exists = await _scalar(
            admin,
            sql.SQL("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = {})").format(
                sql.Literal(schema)
            ),
        )
        assert exists is False


async def test_open_existing_refuses_an_older_schema_and_leaves_it(
    store: BackendStore,
    make_store: StoreFactory,
    admin: Conn,
) -> None:
    assert isinstance(store, PostgresStore)
    latest = latest_version()
    await admin.execute(
        sql.SQL("DELETE FROM {} WHERE version = %s").format(
            sql.Identifier(store.schema, "schema_version")
        ),
        (latest,),
    )
    reader = make_store()
    with pytest.raises(StoreError, match=f"schema version {latest - 1} is older"):
        await reader.open_existing()
    assert not await reader.writable()
    assert await _versions(admin, store.schema) == list(range(1, latest))


# --------------------------------------------------------------------------- errors


async def test_an_unreachable_server_names_host_and_port_but_never_the_password() -> None:
    store = PostgresStore(f"postgresql://switchboard:{PASSWORD}@127.0.0.1:1/switchboard")
    assert PASSWORD not in store.url_for_logs
    assert PASSWORD not in store.describe
    assert store.url_for_logs == "postgresql://switchboard@127.0.0.1:1/switchboard"
    for opening in (store.open, store.open_existing):
        with pytest.raises(StoreError, match=r"127\.0\.0\.1:1") as caught:
            await opening()
        assert not isinstance(caught.value, StoreBusy)
        assert PASSWORD not in str(caught.value)
        assert not await store.writable()


def test_a_malformed_url_is_a_configuration_error() -> None:
    with pytest.raises(ConfigError, match=r"store\.url") as caught:
        PostgresStore(f"postgresql://u:{PASSWORD}@127.0.0.1:notaport/db")
    assert PASSWORD not in str(caught.value)


def test_key_value_connection_strings_work_too() -> None:
    store = PostgresStore(f"host=db.internal port=6432 dbname=bot user=sb password={PASSWORD}")
    assert store.url_for_logs == "postgresql://sb@db.internal:6432/bot"
    assert PASSWORD not in store.describe


async def test_a_row_locked_past_the_lock_timeout_is_store_busy(
    url: str, clock: ManualClock
) -> None:
    """The kernel's loops wait out ``StoreBusy`` (transient) but stop on other store errors."""
    async with (
        fresh_schema(url) as schema,
        PostgresStore(url, schema=schema, clock=clock, lock_timeout_s=0.05) as store,
    ):
        await store.settings.set("paused", "no")
        async with await psycopg.AsyncConnection.connect(url) as holder:
            await holder.execute(
                sql.SQL("SELECT * FROM {} FOR UPDATE").format(sql.Identifier(schema, "settings"))
            )
            with pytest.raises(StoreBusy, match="lock timeout"):
                await store.settings.set("paused", "yes")
            assert await store.settings.get("paused") == "no"  # readers never wait
            await holder.rollback()
        await store.settings.set("paused", "yes")  # free again
        assert await store.settings.get("paused") == "yes"


async def test_a_lost_connection_is_store_busy_and_the_pool_recovers(url: str, admin: Conn) -> None:
    """A server restart (here: the store's connections terminated) is transient."""
    name = f"sb-test-{secrets.token_hex(4)}"
    async with (
        fresh_schema(url) as schema,
        PostgresStore(make_conninfo(url, application_name=name), schema=schema) as store,
    ):
        await store.settings.set("paused", "no")
        await admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
            (name,),
        )
        with pytest.raises(StoreBusy, match="terminating connection"):
            await store.settings.get("paused")
        assert await store.settings.get("paused") == "no"  # a new connection took its place
        assert await store.writable()


async def test_a_constraint_violation_is_a_store_error_not_store_busy(store: BackendStore) -> None:
    await store.access.add_pairing(_pairing("ABC123"))
    with pytest.raises(StoreError) as caught:
        await store.access.add_pairing(_pairing("ABC123"))
    assert not isinstance(caught.value, StoreBusy)


# --------------------------------------------------------------------------- two stores


async def test_one_message_journaled_by_two_stores_at_once_gets_one_entry(
    make_store: StoreFactory,
) -> None:
    async with make_store() as first, make_store() as second:
        for n in range(20):
            message = inbound(f"m{n}")
            ids = await asyncio.gather(record(first, message, "a"), record(second, message, "b"))
            assert sum(i is not None for i in ids) == 1, ids
        assert len(await first.inbound.unfinished()) == 20


async def test_one_delivery_enqueued_by_two_stores_at_once_makes_one_row(
    make_store: StoreFactory,
) -> None:
    async with make_store() as first, make_store() as second:
        for n in range(20):
            batch = [item(f"k{n}"), item(f"k{n}-part-2")]
            one, two = await asyncio.gather(enqueue(first, batch), enqueue(second, batch))
            assert one == two
        assert (await first.outbox.counts())[OutboxState.PENDING] == 40


async def test_a_pairing_code_is_taken_once_across_stores(make_store: StoreFactory) -> None:
    async with make_store() as first, make_store() as second:
        await first.access.add_pairing(_pairing("A"))
        taken = await asyncio.gather(
            *((first if n % 2 else second).access.take_pairing("A", START) for n in range(6))
        )
        assert [t for t in taken if t is not None] == [_pairing("A")]


async def test_a_status_another_store_sets_is_seen_but_not_our_own_writes(
    make_store: StoreFactory,
) -> None:
    """Only other writers' changes empty the cache (as SQLite's ``data_version``)."""
    async with make_store(other_writers_check_s=0) as daemon, make_store() as cli:
        await daemon.access.set_status("telegram", "u1", UserStatus.APPROVED, by="admin")
        assert await daemon.access.status("telegram", "u1") is UserStatus.APPROVED
        before = await daemon._db.generation()
        await daemon.access.set_status("telegram", "u2", UserStatus.DENIED, by="admin")
        await daemon.conversations.bind(key(), "t1")
        await daemon.conversations.rotate(key(), "t2")
        assert await daemon._db.generation() == before
        await cli.access.set_status("telegram", "u1", UserStatus.DENIED, by="cli")
        assert await daemon._db.generation() == before + 1
        assert await daemon.access.status("telegram", "u1") is UserStatus.DENIED
