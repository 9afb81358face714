"""Chat leases between replicas on one PostgreSQL schema (design §11 "replicas"): a chat is
held by one live replica, messages journaled elsewhere wait for it, and the chats and
unfinished messages of a replica that is gone are taken over once, by one replica; a holder
hands an idle chat straight to another live replica, and nothing in flight moves."""

from __future__ import annotations

import asyncio
import functools
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from bot.messages import ChatType
from bot.records import ChatRef, Clarification, InboundStatus
from store.postgres import PostgresStore
from store.sqlite import SqliteStore
from tests.fakes.common.waiting import eventually
from tests.postgres import server_url
from tests.store.support import (
    START,
    BackendStore,
    StoreFactory,
    enqueue,
    inbound,
    item,
    key,
    record,
    register,
)

EXPIRY_S = 15.0
C1 = ChatRef("telegram", "", "c1")
C2 = ChatRef("telegram", "", "c2")
C3 = ChatRef("telegram", "", "c3")
QUIET_S = 5.0


@pytest.fixture
def backend() -> str:
    """Leases matter where replicas share a store: PostgreSQL."""
    return "postgres"


async def test_the_first_replica_claims_a_free_chat_and_takes_its_message(
    pair: tuple[BackendStore, BackendStore],
) -> None:
    a, _ = pair
    entry = await record(a, inbound("m1"), "k1")
    adoption = await a.leases.adopt("a", START, EXPIRY_S, [C1])
    assert adoption.held == {C1}
    assert adoption.claimed == {C1}
    assert [(t.entry.id, t.previous_owner) for t in adoption.entries] == [(entry, None)]
    again = await a.leases.adopt("a", START, EXPIRY_S, [C1])
    assert (again.held, again.claimed, again.entries) == (frozenset({C1}), frozenset(), ())
    assert await a.leases.held("a") == 1


async def test_a_message_journaled_by_another_replica_waits_for_the_holder_in_order(
    pair: tuple[BackendStore, BackendStore],
) -> None:
    a, b = pair
    first = await record(a, inbound("m1"), "k1")
    await a.leases.adopt("a", START, EXPIRY_S, [C1])
    second = await record(b, inbound("m2"), "k2")
    third = await record(b, inbound("m3"), "k3")
    at_b = await b.leases.adopt("b", START, EXPIRY_S, [C1])
    assert (at_b.held, at_b.others, at_b.entries) == (frozenset(), {C1: "a"}, ())
    assert await a.leases.orphaned("a", START, EXPIRY_S) == [C1]
    at_a = await a.leases.adopt("a", START, EXPIRY_S)
    assert [t.entry.id for t in at_a.entries] == [second, third]
    assert all(t.previous_owner is None for t in at_a.entries)
    assert first is not None
    assert await a.leases.orphaned("a", START, EXPIRY_S) == []
    assert await b.leases.orphaned("b", START, EXPIRY_S) == []  # a's, and a is live


async def test_the_chats_of_a_replica_that_is_gone_are_taken_once_with_its_work(
    pair: tuple[BackendStore, BackendStore], make_store: StoreFactory
) -> None:
    a, b = pair
    running = await record(a, inbound("m1"), "k1")
    queued = await record(a, inbound("m2", chat_id="c2"), "k2")
    await a.leases.adopt("a", START, EXPIRY_S, [C1, C2])
    assert running is not None
    await a.inbound.update(running, InboundStatus.RUNNING)
    later = START + timedelta(seconds=EXPIRY_S + 1)
    await b.replicas.heartbeat("b", later)  # a's heartbeat stopped at START: a is gone
    async with make_store() as c:
        await register(c, "c", seconds=EXPIRY_S + 1)
        assert await b.leases.orphaned("b", later, EXPIRY_S) == [C1, C2]
        taken_b, taken_c = await asyncio.gather(
            b.leases.adopt("b", later, EXPIRY_S), c.leases.adopt("c", later, EXPIRY_S)
        )
    taken = [t for adoption in (taken_b, taken_c) for t in adoption.entries]
    assert sorted((t.entry.id, t.previous_owner) for t in taken) == [(running, "a"), (queued, "a")]
    assert taken_b.claimed.isdisjoint(taken_c.claimed)
    assert taken_b.claimed | taken_c.claimed == {C1, C2}


async def test_pending_outbox_rows_of_a_chat_nobody_holds_are_work_to_take(
    pair: tuple[BackendStore, BackendStore],
) -> None:
    a, b = pair
    (row,) = await enqueue(a, [item("reply")])
    assert await b.leases.orphaned("b", START, EXPIRY_S) == [C1]
    assert await a.outbox.due(START, holder="a") == []
    adoption = await a.leases.adopt("a", START, EXPIRY_S)
    assert adoption.claimed == {C1}
    assert [r.id for r in await a.outbox.due(START, holder="a")] == [row]
    assert await b.outbox.due(START, holder="b") == []
    assert await b.leases.orphaned("b", START, EXPIRY_S) == []
    assert await a.outbox.next_due_at(holder="b") is None


async def test_a_fresh_start_under_the_same_id_recovers_what_that_id_had(
    pair: tuple[BackendStore, BackendStore],
) -> None:
    a, _ = pair
    entry = await record(a, inbound("m1"), "k1")
    await a.leases.adopt("a", START, EXPIRY_S, [C1])
    assert await a.leases.orphaned("a", START, EXPIRY_S) == []
    assert await a.leases.orphaned("a", START, EXPIRY_S, fresh_start=True) == [C1]
    adoption = await a.leases.adopt("a", START, EXPIRY_S, fresh_start=True)
    assert [(t.entry.id, t.previous_owner) for t in adoption.entries] == [(entry, "a")]
    assert adoption.claimed == {C1}


async def test_a_replica_is_woken_when_another_journals_for_its_chat(
    make_store: StoreFactory,
) -> None:
    async with make_store(listen=True) as a, make_store() as b:
        await register(a, "a")
        await register(b, "b")
        woken = asyncio.Event()
        a.leases.on_wake("a", woken.set)
        await a.leases.adopt("a", START, EXPIRY_S, [C1])
        await record(b, inbound("m2"), "k2")
        await b.leases.adopt("b", START, EXPIRY_S, [C1])
        async with asyncio.timeout(5):
            await woken.wait()
        woken.clear()
        await b.leases.wake(["*"])
        async with asyncio.timeout(5):
            await woken.wait()


async def test_a_released_replica_holds_nothing(pair: tuple[BackendStore, BackendStore]) -> None:
    a, b = pair
    await a.leases.adopt("a", START, EXPIRY_S, [C1, C2])
    assert await a.leases.release("a") == 2
    assert (await b.leases.adopt("b", START, EXPIRY_S, [C1])).claimed == {C1}


async def test_an_exclusive_name_has_one_holder_and_passes_on_when_it_is_let_go(
    pair: tuple[BackendStore, BackendStore],
) -> None:
    a, b = pair
    second_holds = asyncio.Event()

    async def standby() -> None:
        async with b.leases.exclusive("telegram:poll"):
            second_holds.set()

    async with a.leases.exclusive("telegram:poll") as hold:
        waiting = asyncio.create_task(standby(), name="test:standby")
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(1.5):  # a bound on what must not happen
                await asyncio.shield(second_holds.wait())
        assert not hold.lost
    async with asyncio.timeout(10):
        await second_holds.wait()
    await waiting


async def test_sqlite_serves_one_daemon_that_holds_every_chat(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    async with store:
        adoption = await store.leases.adopt("x", START, EXPIRY_S, [C1])
        assert (store.leases.shared, adoption.held, adoption.entries) == (
            False,
            frozenset({C1}),
            (),
        )
        async with store.leases.exclusive("telegram:poll") as hold:
            assert not hold.lost


async def test_two_replicas_claiming_one_free_chat_at_once_give_it_one_holder(
    pair: tuple[BackendStore, BackendStore],
) -> None:
    a, b = pair
    first = await record(a, inbound("m1"), "k1")
    second = await record(b, inbound("m2"), "k2")
    at_a, at_b = await asyncio.gather(
        a.leases.adopt("a", START, EXPIRY_S, [C1]), b.leases.adopt("b", START, EXPIRY_S, [C1])
    )
    (winner, loser) = (at_a, at_b) if at_a.held else (at_b, at_a)
    assert (winner.held, loser.held) == (frozenset({C1}), frozenset())
    assert loser.others == {C1: "a" if winner is at_a else "b"}
    assert {t.entry.id for t in winner.entries} == {first, second}
    assert loser.entries == ()


async def test_a_replica_that_was_not_live_learns_its_chat_moved_at_its_next_intake(
    pair: tuple[BackendStore, BackendStore],
) -> None:
    """A stalled replica (no heartbeat past the expiry) lost its chat meanwhile: what is
    journaled for the chat after that is the new holder's, not taken on an old sighting."""
    a, b = pair
    await record(a, inbound("m1"), "k1")
    await a.leases.adopt("a", START, EXPIRY_S, [C1])
    later = START + timedelta(seconds=EXPIRY_S + 1)
    await b.replicas.heartbeat("b", later)
    assert (await b.leases.adopt("b", later, EXPIRY_S)).claimed == {C1}
    await a.replicas.heartbeat("a", later)  # a's loop runs again
    await record(a, inbound("m2"), "k2")
    at_a = await a.leases.adopt("a", later, EXPIRY_S, [C1])
    assert (at_a.held, at_a.others, at_a.entries) == (frozenset(), {C1: "b"}, ())


async def test_an_idle_chat_is_handed_straight_to_a_live_replica_and_busy_ones_stay(
    make_store: StoreFactory,
) -> None:
    quiet = START + timedelta(seconds=QUIET_S + 1)  # the store's clock says START
    async with make_store() as a, make_store(listen=True) as b:
        await register(a, "a")
        await register(b, "b")
        await register(a, "gone", seconds=-EXPIRY_S - 10)  # not live
        woken = asyncio.Event()
        b.leases.on_wake("b", woken.set)
        await record(a, inbound("m1"), "k1")  # C1: a message not answered yet
        done = await record(a, inbound("m2", chat_id="c2"), "k2")  # C2: answered
        await enqueue(a, [item("reply", conversation=key("c3"))])  # C3: a reply to send
        await a.leases.adopt("a", quiet, EXPIRY_S, [C1, C2, C3])
        assert done is not None
        await a.inbound.update(done, InboundStatus.HANDLED, reason="answered")
        assert await a.leases.loads(quiet, EXPIRY_S) == {"a": 3, "b": 0}
        assert await a.leases.idle("a", quiet, QUIET_S, 10) == [C2]
        assert await a.leases.idle("a", START, QUIET_S, 10) == []  # answered just now

        async def hand(owner: str, to: str, chats: list[ChatRef]) -> list[ChatRef]:
            return await a.leases.hand_over(
                owner, to, chats, now=quiet, expiry_s=EXPIRY_S, quiet_s=QUIET_S
            )

        assert await hand("b", "a", [C2]) == []  # only the holder hands a chat over
        assert await hand("a", "gone", [C2]) == []  # only to a live replica
        assert await hand("a", "b", [C1, C2, C3]) == [C2]
        async with asyncio.timeout(5):
            await woken.wait()
        assert await b.leases.loads(quiet, EXPIRY_S) == {"a": 2, "b": 1}
        assert await hand("a", "b", [C2]) == []  # a holds it no longer
        await record(a, inbound("m3", chat_id="c2"), "k3")
        at_a = await a.leases.adopt("a", quiet, EXPIRY_S, [C2])  # a saw itself hold C2 just now
        assert (at_a.held, at_a.others, at_a.entries) == (frozenset(), {C2: "b"}, ())
        at_b = await b.leases.adopt("b", quiet, EXPIRY_S)
        assert [t.entry.message.message_id for t in at_b.entries] == ["m3"]
        assert all(t.previous_owner is None for t in at_b.entries)


async def test_a_hand_over_waiting_for_the_holders_own_intake_sees_the_work_it_took(
    pair: tuple[BackendStore, BackendStore],
) -> None:
    """An intake of the holder (``adopt``) locks the lease row while it takes new work; a
    hand-over meanwhile waits for it and then checks idleness afresh, so the chat stays."""
    a, _ = pair
    assert isinstance(a, PostgresStore)
    quiet = START + timedelta(seconds=QUIET_S + 1)
    entry = await record(a, inbound("m1"), "k1")
    await a.leases.adopt("a", START, EXPIRY_S, [C1])
    assert entry is not None
    await a.inbound.update(entry, InboundStatus.HANDLED, reason="answered")
    assert await a.leases.idle("a", quiet, QUIET_S, 10) == [C1]
    table = functools.partial(sql.Identifier, a.schema)
    async with await psycopg.AsyncConnection.connect(server_url()) as intake:
        async with intake.transaction():
            await intake.execute(
                sql.SQL("SELECT 1 FROM {} WHERE chat_id = 'c1' FOR UPDATE").format(
                    table("chat_leases")
                )
            )
            await intake.execute(
                sql.SQL("UPDATE {} SET status = 'accepted' WHERE id = %s").format(table("inbound")),
                (entry,),
            )  # new work for the chat, taken under the lease's lock
            moving = asyncio.create_task(
                a.leases.hand_over("a", "b", [C1], now=quiet, expiry_s=EXPIRY_S, quiet_s=QUIET_S),
                name="test:hand-over",
            )
            await eventually(lambda: _waits_for_a_lock(intake), within=5)
        assert await moving == []
    assert await a.leases.held("a") == 1


async def _waits_for_a_lock(conn: psycopg.AsyncConnection[Any]) -> bool:
    """Whether some session waits for a lock ``conn`` holds."""
    cursor = await conn.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))",
        (conn.info.backend_pid,),
    )
    row = await cursor.fetchone()
    return row is not None and row[0] > 0


async def test_a_chat_waiting_for_an_answer_to_a_question_is_not_idle(
    pair: tuple[BackendStore, BackendStore],
) -> None:
    a, _ = pair
    await a.leases.adopt("a", START, EXPIRY_S, [C1])
    asked = Clarification(
        id="q1", key=key(), chat_type=ChatType.GROUP, thread_id="t1", asked_user_id="u1",
        question="which?", options=(), question_message_id=None,
        created_at=START, expires_at=START + timedelta(minutes=10),
    )  # fmt: skip
    await a.clarifications.add(asked)
    assert await a.leases.idle("a", START, 0, 10) == []
    assert await a.leases.hand_over("a", "b", [C1], now=START, expiry_s=EXPIRY_S, quiet_s=0) == []
    assert await a.clarifications.resolve("q1", "this one")
    assert await a.leases.idle("a", START, 0, 10) == [C1]
    moved = await a.leases.hand_over("a", "b", [C1], now=START, expiry_s=EXPIRY_S, quiet_s=0)
    assert moved == [C1]


async def test_sqlite_has_nothing_to_rebalance(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "s.db") as store:
        await store.leases.adopt("x", START, EXPIRY_S, [C1])
        assert await store.leases.loads(START, EXPIRY_S) == {}
        assert await store.leases.idle("x", START, QUIET_S, 10) == []
        moved = await store.leases.hand_over(
            "x", "y", [C1], now=START, expiry_s=EXPIRY_S, quiet_s=QUIET_S
        )
        assert moved == []
