"""Fencing tokens on chat leases (design §11 "replicas"): every grant of a chat takes a larger
token, and a reply recorded under an old grant is refused in the same statement, with
nothing written, once another replica holds the chat."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from prometheus_client import Counter
from psycopg import sql

from bot.errors import ChatLost
from bot.fleet.fence import ChatFence
from bot.records import ChatRef, InboundStatus, LeaseFence, OutboxState
from store.postgres import PostgresStore
from store.sqlite import SqliteStore
from tests.postgres import server_url
from tests.store.support import START, BackendStore, inbound, item, record

EXPIRY_S = 15.0
C1 = ChatRef("telegram", "", "c1")
C2 = ChatRef("telegram", "", "c2")
LATER = START + timedelta(seconds=EXPIRY_S + 1)
"""When ``a``, whose heartbeat stopped at ``START``, is no longer live."""


@pytest.fixture
def backend() -> str:
    return "postgres"


async def take_over(b: BackendStore) -> dict[ChatRef, int]:
    """``b`` takes what ``a`` holds once ``a`` is gone; the tokens of its grants."""
    await b.replicas.heartbeat("b", LATER)
    return (await b.leases.adopt("b", LATER, EXPIRY_S, [C1])).tokens


async def test_each_grant_of_a_chat_takes_a_larger_token(
    pair: tuple[BackendStore, BackendStore],
) -> None:
    a, b = pair
    granted = (await a.leases.adopt("a", START, EXPIRY_S, [C1, C2])).tokens
    assert set(granted) == {C1, C2}
    assert (await a.leases.adopt("a", START, EXPIRY_S, [C1])).tokens == {C1: granted[C1]}
    assert await a.leases.tokens("a") == granted
    assert await a.leases.tokens("a", [C2]) == {C2: granted[C2]}
    taken = await take_over(b)
    assert taken[C1] > max(granted.values())
    assert await a.leases.tokens("a") == {C2: granted[C2]}
    assert await b.leases.tokens("b", [C1, C2]) == taken


async def test_a_reply_under_a_lost_grant_is_refused_and_finishes_nothing(
    pair: tuple[BackendStore, BackendStore],
) -> None:
    a, b = pair
    entry = await record(a, inbound("m1"), "k1")
    assert entry is not None
    old = LeaseFence("a", C1, (await a.leases.adopt("a", START, EXPIRY_S, [C1])).tokens[C1])
    new = LeaseFence("b", C1, (await take_over(b))[C1])
    for items in ([item("one")], [item("two"), item("three")]):
        with pytest.raises(ChatLost):
            await a.outbox.enqueue_rows(items, finishes=[entry], fence=old)
    assert await a.outbox.listing() == []
    (journaled,) = await a.inbound.find("telegram", "m1")
    assert journaled.status is InboundStatus.ACCEPTED
    (row,) = await b.outbox.enqueue_rows([item("one")], finishes=[entry], fence=new)
    assert row.state is OutboxState.PENDING
    (journaled,) = await a.inbound.find("telegram", "m1")
    assert journaled.status is InboundStatus.HANDLED


async def test_a_row_that_exists_is_no_way_round_the_fence(
    pair: tuple[BackendStore, BackendStore],
) -> None:
    """A resumed turn finds its answer recorded already: the journal is finished only under
    the current grant, by a statement of its own."""
    a, b = pair
    entry = await record(a, inbound("m1"), "k1")
    assert entry is not None
    old = LeaseFence("a", C1, (await a.leases.adopt("a", START, EXPIRY_S, [C1])).tokens[C1])
    await a.outbox.enqueue_rows([item("one")])
    await take_over(b)
    with pytest.raises(ChatLost):
        await a.outbox.enqueue_rows([item("one")], finishes=[entry], fence=old)
    (journaled,) = await a.inbound.find("telegram", "m1")
    assert journaled.status is InboundStatus.ACCEPTED


async def test_a_hand_over_is_a_new_grant(pair: tuple[BackendStore, BackendStore]) -> None:
    a, _ = pair
    granted = (await a.leases.adopt("a", START, EXPIRY_S, [C1])).tokens[C1]
    moved = await a.leases.hand_over("a", "b", [C1], now=START, expiry_s=EXPIRY_S, quiet_s=0)
    assert moved == [C1]
    assert (await a.leases.tokens("b"))[C1] > granted
    with pytest.raises(ChatLost):
        await a.outbox.enqueue_rows([item("one")], fence=LeaseFence("a", C1, granted))


async def test_the_holder_never_drops_its_work_for_a_token_it_did_not_see(
    pair: tuple[BackendStore, BackendStore],
) -> None:
    """The chat went to ``b`` and back to ``a`` without ``a``'s fence hearing of it: the lease
    is ``a``'s, so is the chat's work; the new token is learnt and nothing is dropped."""
    a, b = pair
    fence = ChatFence(a.leases, "a", Counter("fenced", "", ["what"], registry=None))
    lost: list[frozenset[ChatRef]] = []
    fence.on_lost.append(lost.append)
    fence.note(await a.leases.adopt("a", START, EXPIRY_S, [C1]))
    for owner, to in (("a", "b"), ("b", "a")):
        moved = await a.leases.hand_over(owner, to, [C1], now=START, expiry_s=EXPIRY_S, quiet_s=0)
        assert moved == [C1]
    assert await fence.holds(C1, "send")
    await fence.verify()
    assert (await fence.grant(C1)) == LeaseFence("a", C1, (await a.leases.tokens("a"))[C1])
    await take_over(b)
    assert not await fence.holds(C1, "send")
    assert lost == [frozenset({C1})]


async def test_an_entry_left_with_a_replica_that_lost_its_chat_is_the_holders(
    pair: tuple[BackendStore, BackendStore],
) -> None:
    """``a`` stalled with its turn's entry locked (SIGSTOP inside a transaction), so ``b``'s
    takeover claimed the chat but skipped the entry; once ``a`` runs again (live, but fenced out
    of the chat, so it drops its work) the entry is ``b``'s to take, as a recovered one."""
    a, b = pair
    assert isinstance(a, PostgresStore)
    entry = await record(a, inbound("m1"), "k1")
    await a.leases.adopt("a", START, EXPIRY_S, [C1])
    inbound_table = sql.Identifier(a.schema, "inbound")
    connecting = psycopg.AsyncConnection.connect(server_url())
    async with await connecting as stalled, stalled.transaction():
        await stalled.execute(
            sql.SQL("SELECT 1 FROM {} WHERE id = %s FOR UPDATE").format(inbound_table), (entry,)
        )
        taken = await b.leases.adopt("b", LATER, EXPIRY_S)
    assert (taken.claimed, taken.entries) == (frozenset({C1}), ())
    await b.replicas.heartbeat("b", LATER)
    await a.replicas.heartbeat("a", LATER)  # a runs again
    assert await b.leases.orphaned("b", LATER, EXPIRY_S) == [C1]
    again = await b.leases.adopt("b", LATER, EXPIRY_S)
    assert [(t.entry.id, t.previous_owner) for t in again.entries] == [(entry, "a")]
    assert await a.leases.orphaned("a", LATER, EXPIRY_S) == []


async def test_sqlite_has_no_fence_to_check(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "s.db") as store:
        assert await store.leases.tokens("anyone") == {}
        fence = LeaseFence("anyone", C1, 7)
        (row,) = await store.outbox.enqueue_rows([item("one")], fence=fence)
    assert row.state is OutboxState.PENDING
