"""PostgresStore's own machinery: the schema it lives in, migrations under an advisory lock,
errors (transient or not, never showing the password), and two stores on one schema racing
for the same rows. (What every backend does is in the contract modules beside this one.)"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg.rows import TupleRow

from bot.errors import ConfigError, StoreBusy, StoreError
from bot.records import OutboxState, PairingRequest, UserStatus
from store.postgres import PostgresStore, migrate
from store.postgres.db import LISTEN_APPLICATION, PgDatabase, notify_channel
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
    "chat_leases",
    "delivery_attempts",
    "schedules",
    "schedule_firings",
    "mutes",
    "console_revocations",
    "approval_runs",
    "approvals",
    "clarifications",
    "users",
    "pairing_requests",
    "audit",
    "settings",
    "write_probe",
    "replicas",
    "cache_writes",
    "usage",
    "usage_hits",
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


# --------------------------------------------------------------------------- notifications


def _pg(store: BackendStore) -> PgDatabase:
    assert isinstance(store, PostgresStore)
    return store._db


async def _wait_until(condition: Callable[[], Awaitable[bool]], timeout_s: float = 5.0) -> None:
    """Return once ``condition`` holds; fail after ``timeout_s`` (a bound, not a pause)."""
    async with asyncio.timeout(timeout_s):
        while not await condition():  # noqa: ASYNC110 - the store's state, polled within a bound
            await asyncio.sleep(0.005)


async def _kill_listener(admin: Conn, schema: str) -> int:
    cursor = await admin.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
        " WHERE application_name = %s AND query = %s",
        (LISTEN_APPLICATION, f'LISTEN "{notify_channel(schema)}"'),
    )
    return len(await cursor.fetchall())


async def test_another_stores_change_reaches_a_listening_store_at_once(
    make_store: StoreFactory,
) -> None:
    """NOTIFY, not the periodic check (an hour here), empties a daemon's caches; a store
    that does not listen keeps its cached value until its own check."""
    async with (
        make_store(other_writers_check_s=3600, listen=True) as daemon,
        make_store(other_writers_check_s=3600) as deaf,
        make_store() as cli,
    ):
        assert _pg(daemon).listening
        assert not _pg(deaf).listening
        await daemon.access.set_status("telegram", "u1", UserStatus.APPROVED, by="admin")
        for store in (daemon, deaf):
            assert await store.access.status("telegram", "u1") is UserStatus.APPROVED
        await cli.access.set_status("telegram", "u1", UserStatus.DENIED, by="cli")

        async def daemon_sees_it() -> bool:
            return await daemon.access.status("telegram", "u1") is UserStatus.DENIED

        await _wait_until(daemon_sees_it, timeout_s=1.0)
        assert await deaf.access.status("telegram", "u1") is UserStatus.APPROVED  # cached


async def test_a_listening_store_is_not_woken_by_its_own_writes(make_store: StoreFactory) -> None:
    async with (
        make_store(other_writers_check_s=3600, listen=True) as daemon,
        make_store() as cli,
    ):
        before = await _pg(daemon).generation()
        await daemon.access.set_status("telegram", "u1", UserStatus.APPROVED, by="admin")
        await daemon.conversations.bind(key(), "t1")
        await cli.access.set_status("telegram", "u2", UserStatus.DENIED, by="cli")

        async def bumped() -> bool:
            return await _pg(daemon).generation() != before

        await _wait_until(bumped, timeout_s=1.0)
        assert await _pg(daemon).generation() == before + 1


async def test_a_dropped_listen_connection_falls_back_to_the_check_and_comes_back(
    make_store: StoreFactory, url: str, admin: Conn
) -> None:
    async with (
        make_store(other_writers_check_s=0, listen=True) as daemon,
        make_store() as cli,
    ):
        schema = _pg(daemon).schema
        assert _pg(daemon).listening
        assert await _kill_listener(admin, schema) == 1

        async def deaf() -> bool:
            return not _pg(daemon).listening

        await _wait_until(deaf)
        assert await daemon.access.status("telegram", "u1") is None
        await cli.access.set_status("telegram", "u1", UserStatus.DENIED, by="cli")
        # Not listening: the check (every call here) sees it without any notification.
        assert await daemon.access.status("telegram", "u1") is UserStatus.DENIED

        async def listening() -> bool:
            return _pg(daemon).listening

        await _wait_until(listening)
        await cli.access.set_status("telegram", "u1", UserStatus.APPROVED, by="cli")

        async def seen() -> bool:
            return await daemon.access.status("telegram", "u1") is UserStatus.APPROVED

        await _wait_until(seen, timeout_s=1.0)
    assert url  # the fixture's server is the one the stores use


async def test_closing_a_listening_store_ends_its_listener(make_store: StoreFactory) -> None:
    daemon = make_store(listen=True)
    async with daemon:
        listener = _pg(daemon)._listener
        assert listener is not None
        assert not listener.done()
    assert listener.done()
    assert _pg(daemon)._listener is None
    assert not _pg(daemon).listening


async def test_the_operator_cli_never_listens(make_store: StoreFactory) -> None:
    async with make_store(listen=True):
        cli = make_store(listen=True)
        await cli.open_existing()
        try:
            assert _pg(cli)._listener is None
        finally:
            await cli.aclose()


def test_the_channel_name_fits_postgresql() -> None:
    assert notify_channel("switchboard") == "switchboard_switchboard"
    assert len(notify_channel("s" * 63).encode()) == 63
