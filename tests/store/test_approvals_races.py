"""Approvals raced on PostgreSQL, for certain: two replicas' statements are held behind a lock a
third session takes on the row they want, and let go together once both wait for it. Then the
compare-and-sets must hold on their own: one decision, one claim of the run, no expiry of an
approval decided meanwhile. (``test_approvals.py`` races them unforced, on both backends.)"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine
from datetime import timedelta
from typing import Any, Final, TypeVar

import psycopg
import pytest
from psycopg import sql

from bot.ports.approvals import ApprovalState
from store.postgres import PostgresStore
from tests.fakes.common.waiting import eventually
from tests.postgres import require_postgres
from tests.store.support import START, BackendStore, StoreFactory
from tests.store.test_approvals import added, approve, paused

Conn = psycopg.AsyncConnection[Any]
T = TypeVar("T")
_WAITING_ON: Final = (
    "WITH RECURSIVE blocked (pid) AS ("
    " SELECT pid FROM pg_stat_activity WHERE %s = ANY (pg_blocking_pids(pid))"
    " UNION SELECT a.pid FROM pg_stat_activity a JOIN blocked b"
    " ON b.pid = ANY (pg_blocking_pids(a.pid)))"
    " SELECT count(*) FROM blocked"
)
"""How many sessions wait, directly or behind another waiter, for a lock the session holds."""


@pytest.fixture
def backend() -> str:
    """Row locks are PostgreSQL's: SQLite serialises writers outright."""
    return "postgres"


@pytest.fixture
async def replicas(
    store: BackendStore, make_store: StoreFactory
) -> AsyncIterator[tuple[PostgresStore, PostgresStore]]:
    async with make_store() as other:
        assert isinstance(store, PostgresStore)
        assert isinstance(other, PostgresStore)
        yield store, other


@pytest.fixture
async def holder() -> AsyncIterator[Conn]:
    """A session of the test's own, to hold row locks with."""
    async with await psycopg.AsyncConnection.connect(require_postgres()) as conn:
        yield conn


async def _waiting_on(conn: Conn) -> int:
    cursor = await conn.execute(_WAITING_ON, (conn.info.backend_pid,))
    row = await cursor.fetchone()
    return 0 if row is None else int(row[0])


async def _held_then_let_go(
    holder: Conn, lock: sql.Composed, racers: list[Coroutine[Any, Any, T]]
) -> list[T]:
    """Run ``racers`` while ``holder`` holds the lock ``lock`` takes; commit once every one
    of them waits for it; their results."""
    async with holder.transaction():
        await holder.execute(lock)
        tasks = [
            asyncio.create_task(racer, name=f"test:racer-{n}") for n, racer in enumerate(racers)
        ]
        await eventually(lambda: _holds(holder, len(tasks)), within=10)
        assert not any(task.done() for task in tasks)
    return list(await asyncio.gather(*tasks))


async def _holds(holder: Conn, waiters: int) -> bool:
    return await _waiting_on(holder) >= waiters


def _lock_row(store: PostgresStore, table: str, row_id: str) -> sql.Composed:
    return sql.SQL("SELECT 1 FROM {} WHERE id = {} FOR UPDATE").format(
        sql.Identifier(store.schema, table), sql.Literal(row_id)
    )


async def test_two_replicas_deciding_one_approval_behind_its_lock_one_wins(
    replicas: tuple[PostgresStore, PostgresStore], holder: Conn
) -> None:
    a, b = replicas
    (first, _) = await added(a, paused())
    results = await _held_then_let_go(
        holder,
        _lock_row(a, "approvals", first.id),
        [a.approvals.decide(first.id, approve("a")), b.approvals.decide(first.id, approve("b"))],
    )
    assert sorted(results) == [False, True]
    found = await a.approvals.get(first.id)
    assert found is not None
    assert found.decided_by == ("a" if results[0] else "b")


async def test_two_replicas_claiming_a_run_behind_its_lock_one_resumes_it(
    replicas: tuple[PostgresStore, PostgresStore], holder: Conn
) -> None:
    """Each decided one of the run's last two approvals, then both claim it at once."""
    a, b = replicas
    (first, second) = await added(a, paused())
    now = START + timedelta(minutes=1)
    assert await a.approvals.decide(first.id, approve("a"))
    assert await b.approvals.decide(second.id, approve("b"))
    claims = await _held_then_let_go(
        holder,
        _lock_row(a, "approval_runs", "r1"),
        [a.approvals.claim_run("r1", now), b.approvals.claim_run("r1", now)],
    )
    assert sorted(claims) == [False, True]


async def test_an_approval_decided_while_the_sweep_waits_is_not_expired(
    replicas: tuple[PostgresStore, PostgresStore], holder: Conn
) -> None:
    """The decision's UPDATE is made (not yet committed) before the sweep looks; the sweep
    waits for it and then finds the approval no longer pending."""
    a, b = replicas
    (first, second) = await added(a, paused())
    table = sql.Identifier(a.schema, "approvals")
    decide = sql.SQL(
        "UPDATE {} SET state = 'approved', decided_by = 'a' WHERE id = {} AND state = 'pending'"
    ).format(table, sql.Literal(first.id))
    (expired,) = await _held_then_let_go(holder, decide, [b.approvals.expire_due(first.expires_at)])
    assert [x.id for x in expired] == [second.id]
    found = await a.approvals.get(first.id)
    assert found is not None
    assert (found.state, found.decided_by) == (ApprovalState.APPROVED, "a")


async def test_a_decision_and_the_sweep_racing_behind_the_lock_move_the_approval_once(
    replicas: tuple[PostgresStore, PostgresStore], holder: Conn
) -> None:
    """A decision just before the expiry and a sweep just after it: whichever takes the row
    first moves it, and the other finds it no longer pending."""
    a, b = replicas
    (first,) = await added(a, paused(), 1)
    just_before = first.expires_at - timedelta(microseconds=1)
    decided, expired = await _held_then_let_go(
        holder,
        _lock_row(a, "approvals", first.id),
        [a.approvals.decide(first.id, approve("a", at=just_before)),
         b.approvals.expire_due(first.expires_at)],
    )  # fmt: skip
    assert isinstance(decided, bool)
    assert isinstance(expired, list)
    found = await a.approvals.get(first.id)
    assert found is not None
    if decided:
        assert (expired, found.state) == ([], ApprovalState.APPROVED)
    else:
        assert [x.id for x in expired] == [first.id]
        assert found.state is ApprovalState.EXPIRED
