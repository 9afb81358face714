"""``store copy``: a SQLite installation, filled through its ports and with a real agent
checkpoint, moved into PostgreSQL and read back through the same ports (design §11)."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from agent.checkpoints import checkpointer
from agent.embedded import EmbeddedBackend
from agent.postgres_checkpoints import copy_checkpoints
from bot.config.store import StoreSettings
from bot.errors import StoreError
from bot.messages import ChatType
from bot.ports import Store
from bot.ports.approvals import (
    Approval,
    ApprovalRun,
    ApprovalState,
    ApprovalStore,
    Decided,
    approvals_of,
)
from bot.records import (
    Clarification,
    ClarificationState,
    InboundStatus,
    MessageLink,
    OutboxState,
    PairingRequest,
    UserStatus,
)
from store.copy import copy_sqlite_to_postgres
from store.postgres import PostgresStore
from store.sqlite import SqliteStore
from tests.agent.support import clarification, collect, final, offline_settings, turn
from tests.postgres import fresh_schema, require_postgres
from tests.store.support import (
    ManualClock,
    destination,
    enqueue,
    inbound,
    item,
    key,
    link_sent,
    record,
)

MESSAGES = ("m1", "m2", "m3", "m4")
TOPIC = key("c2", topic_id="t9", user_id="u7")


@pytest.fixture
async def pg() -> AsyncIterator[tuple[str, str]]:
    url = require_postgres()
    async with fresh_schema(url, "t_copy") as schema:
        yield url, schema


async def fill(store: Store, clock: ManualClock) -> dict[str, int]:
    """One of everything the daemon writes, through the ports; the ids worth checking."""
    ids: dict[str, int] = {}
    for n, message_id in enumerate(MESSAGES):
        chat = "c2" if message_id == "m4" else "c1"
        entry = await record(store, inbound(message_id, chat_id=chat), f"corr-{n}")
        assert entry is not None
        ids[message_id] = entry
        clock.advance(0.123457)  # times keep their microseconds
    await store.inbound.count_duplicate(inbound("m1"))
    clock.advance(2)
    await store.inbound.count_duplicate(inbound("m1"))
    await store.conversations.bind(key(), "th-old")
    clock.advance(1)
    await store.conversations.rotate(key(), "th-1")  # th-old ended, kept as history
    await store.conversations.bind(TOPIC, "th-topic")
    await store.inbound.update(ids["m1"], InboundStatus.RUNNING, key=key(), thread_id="th-1")
    await store.inbound.update(ids["m2"], InboundStatus.DROPPED, reason="paused")
    await store.inbound.update(ids["m4"], InboundStatus.RUNNING, key=TOPIC, thread_id="th-topic")

    pending, retried, dead, sent = await enqueue(
        store, [item("k-pending"), item("k-retry"), item("k-dead"), item("k-sent")]
    )
    ids |= {"pending": pending, "retried": retried, "dead": dead, "sent": sent}
    clock.advance(1)
    await store.outbox.record_attempt(retried, "transient", "HTTP 502")
    await store.outbox.mark_retry(retried, "HTTP 502", clock.now + timedelta(seconds=30))
    await store.outbox.mark_retry(dead, "rate", clock.now + timedelta(seconds=5), counts=False)
    await store.outbox.record_attempt(dead, "permanent", "chat not found")
    await store.outbox.mark_dead(dead, "chat not found")
    await store.outbox.mark_sent(sent, ("s1", "s2"))  # links s1, s2 to th-1
    (reply,) = await store.outbox.enqueue_rows(
        [item("k-reply", conversation=TOPIC)], finishes=[ids["m4"]]
    )
    ids["reply"] = reply.id
    clock.advance(1)
    # A later change to an entry the reply finished: the copy must not run the reply's
    # trigger again (which would mark it handled once more).
    await store.inbound.update(ids["m4"], InboundStatus.DROPPED, reason="forced")
    await link_sent(store, destination("c2"), "s9", MessageLink(key=TOPIC, thread_id="th-topic"))

    asked = Clarification(
        id="q1",
        key=key(),
        chat_type=ChatType.GROUP,
        thread_id="th-1",
        asked_user_id="u1",
        question="Which colour?",
        options=("red", "blue"),
        question_message_id=None,
        created_at=clock.now,
        expires_at=clock.now + timedelta(hours=1),
    )
    await store.clarifications.add(asked)
    await store.clarifications.set_question_message("q1", "s3")
    await store.clarifications.add(dataclasses.replace(asked, id="q2", options=()))
    await store.clarifications.resolve("q2", "green")

    await store.access.set_status("telegram", "u1", UserStatus.APPROVED, "cli:ops")
    await store.access.set_status("slack", "u2", UserStatus.DENIED, "admin:u1")
    await store.access.add_pairing(
        PairingRequest(
            channel="telegram",
            user_id="u3",
            display_name="Grace",
            chat_id="c3",
            code="ABC123",
            created_at=clock.now,
            expires_at=clock.now + timedelta(hours=1),
        )
    )
    await store.audit.record("cli:ops", "users allow", "telegram u1")
    await store.settings.set("paused.telegram", "1")
    await pause_for_approvals(store, clock)
    return ids


async def pause_for_approvals(store: Store, clock: ManualClock) -> None:
    """A run paused on two tool calls: one edited, one still pending."""
    approvals = store_approvals(store)
    run = ApprovalRun(
        id="run-1", key=TOPIC, chat_type=ChatType.GROUP, thread_id="th-topic",
        correlation_id="corr-3", created_at=clock.now,
    )  # fmt: skip
    asked = [
        Approval(
            id=f"ap-{n}", run_id=run.id, position=n, key=TOPIC, chat_type=ChatType.GROUP,
            thread_id="th-topic", asker_id="u7", tool="deploy", args='{"env": "prod"}',
            description="Deploy to prod", allowed=("approve", "edit", "reject"),
            deciders="admins", created_at=clock.now, expires_at=clock.now + timedelta(hours=1),
        )
        for n in range(2)
    ]  # fmt: skip
    await approvals.add(run, asked)
    await approvals.set_message("ap-0", "s4")
    edited = Decided(
        state=ApprovalState.EDITED, by="telegram:u1", by_name="Ada", at=clock.now,
        args='{"env": "staging"}',
    )  # fmt: skip
    assert await approvals.decide("ap-0", edited)


async def everything(store: Store, clock: ManualClock) -> dict[str, Any]:
    """What the ports say about every row ``fill`` wrote."""
    rows = await store.outbox.listing(limit=100)
    return {
        "inbound": {m: await store.inbound.find(None, m) for m in MESSAGES},
        "unfinished": await store.inbound.unfinished(),
        "conversations": await store.conversations.recent(limit=100),
        "count": await store.conversations.count(),
        "active": [await store.conversations.active(k) for k in (key(), TOPIC)],
        "links": [
            await store.links.lookup("telegram", "", chat, m)
            for chat, m in (("c1", "s1"), ("c1", "s2"), ("c2", "s9"))
        ],
        "outbox": rows,
        "attempts": {row.id: await store.outbox.attempts(row.id) for row in rows},
        "counts": await store.outbox.counts(),
        "clarifications": [await store.clarifications.get(c) for c in ("q1", "q2")],
        "pending": await store.clarifications.pending_for_key(key()),
        "users": await store.access.users(),
        "pairings": await store.access.pending_pairings(clock.now),
        "audit": await store.audit.recent(),
        "paused": await store.settings.get("paused.telegram"),
        "approvals": await store_approvals(store).run("run-1"),
        "traced": await store_approvals(store).for_correlation("corr-3"),
    }


def store_approvals(store: Store) -> ApprovalStore:
    approvals = approvals_of(store)
    assert approvals is not None
    return approvals


async def checkpoint_messages(settings: StoreSettings, state_dir: Path, thread: str) -> list[str]:
    async with checkpointer(settings, state_dir) as saver:
        found = await saver.aget_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": ""}})
    assert found is not None
    return [str(m.content) for m in found.checkpoint["channel_values"]["messages"]]


async def continues_on_postgres(
    on_postgres: StoreSettings, tmp_path: Path, thread: str, history: list[str]
) -> None:
    """The copied thread, read by the PostgreSQL saver, has the SQLite history, and an embedded
    backend on PostgreSQL answers its pending question."""
    assert await checkpoint_messages(on_postgres, tmp_path / "pg", thread) == history
    pg_settings = offline_settings(tmp_path / "pg").model_copy(update={"store": on_postgres})
    async with EmbeddedBackend(pg_settings) as continued:
        answer = final(await collect(continued.run(thread, turn("blue", answer="blue"))))
    assert answer.text == "(offline echo model) You chose: blue"
    resumed = await checkpoint_messages(on_postgres, tmp_path / "pg", thread)
    assert resumed[: len(history)] == history
    assert any("hello there" in m for m in resumed)


def approvals_were_copied(after: dict[str, Any], copied: dict[str, int]) -> None:
    """The paused run came over whole: its runs before the approvals that reference them."""
    assert after["approvals"] is not None
    (run, (ap0, ap1)) = after["approvals"]
    assert (run.correlation_id, run.resumed_at) == ("corr-3", None)
    assert (ap0.state, ap0.decided_args, ap0.message_id) == (
        ApprovalState.EDITED, '{"env": "staging"}', "s4",
    )  # fmt: skip
    assert (ap1.state, ap1.allowed) == (ApprovalState.PENDING, ("approve", "edit", "reject"))
    assert copied["approvals"] == 2
    assert list(copied).index("approval_runs") < list(copied).index("approvals")


async def test_a_sqlite_installation_moves_into_postgres(
    tmp_path: Path, pg: tuple[str, str]
) -> None:
    url, schema = pg
    state = tmp_path / "state"
    clock = ManualClock()
    async with SqliteStore.from_state_dir(state, clock=clock) as sqlite:
        ids = await fill(sqlite, clock)
        before = await everything(sqlite, clock)
    async with EmbeddedBackend(offline_settings(state)) as agent:
        thread = await agent.create_thread()
        await collect(agent.run(thread, turn("hello there")))
        clarification(await collect(agent.run(thread, turn("ask: Which colour? | red | blue"))))
    history = await checkpoint_messages(StoreSettings(), state, thread)

    result = await copy_sqlite_to_postgres(
        state / "switchboard.db", url, schema=schema, actor="cli:tester", clock=clock
    )
    copied = await copy_checkpoints(state / "agent.db", url, schema)

    assert result.tables["inbound"] == len(MESSAGES)
    assert result.tables["outbox"] == 6
    assert "write_probe" not in result.tables
    assert next(iter(result.tables)) == "outbox"
    assert copied.threads == 1
    assert copied.checkpoints >= 4
    postgres = PostgresStore(url, schema=schema, clock=clock)
    await postgres.open_existing()
    try:
        after = await everything(postgres, clock)
        (copy_entry, *older) = after.pop("audit")
        assert older == before.pop("audit")
        assert (copy_entry.actor, copy_entry.action) == ("cli:tester", "store copy")
        assert "inbound 4" in copy_entry.detail
        assert after == before
        (m4,) = after["inbound"]["m4"]
        assert (m4.status, m4.reason) == (InboundStatus.DROPPED, "forced")
        assert after["counts"] == {OutboxState.PENDING: 3, OutboxState.SENT: 2,
                                   OutboxState.DEAD: 1}  # fmt: skip
        (q1, q2) = after["clarifications"]
        assert q1 is not None
        assert (q1.options, q1.question_message_id) == (("red", "blue"), "s3")
        assert q2 is not None
        assert (q2.state, q2.answer) == (ClarificationState.ANSWERED, "green")
        approvals_were_copied(after, result.tables)
        # Ids go on past the copied ones.
        (new_row,) = await enqueue(postgres, [item("k-after")])
        assert new_row > max(ids[k] for k in ("pending", "retried", "dead", "sent", "reply"))
        new_entry = await record(postgres, inbound("m9"), "corr-9")
        assert new_entry is not None
        assert new_entry > max(ids[m] for m in MESSAGES)
    finally:
        await postgres.aclose()

    await continues_on_postgres(StoreSettings(url=url, db_schema=schema), tmp_path, thread, history)


async def test_a_target_holding_rows_is_refused_and_left_alone(
    tmp_path: Path, pg: tuple[str, str]
) -> None:
    url, schema = pg
    clock = ManualClock()
    source = tmp_path / "switchboard.db"
    async with SqliteStore(source, clock=clock) as sqlite:
        await sqlite.audit.record("cli:ops", "users allow", "telegram u1")
    async with PostgresStore(url, schema=schema, clock=clock) as postgres:
        await postgres.settings.set("paused.slack", "1")

    with pytest.raises(StoreError, match=r"not empty \(1 settings rows\)"):
        await copy_sqlite_to_postgres(source, url, schema=schema, actor="cli:t", clock=clock)

    async with await psycopg.AsyncConnection.connect(url) as conn:
        query = sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(schema, "audit"))
        assert await (await conn.execute(query)).fetchone() == (0,)


async def test_a_source_at_another_schema_version_is_refused(
    tmp_path: Path, pg: tuple[str, str]
) -> None:
    url, schema = pg
    source = tmp_path / "switchboard.db"
    async with SqliteStore(source):
        pass
    with sqlite3.connect(source) as conn:
        conn.execute("PRAGMA user_version = 99")
    with pytest.raises(StoreError, match=r"newer than this Switchboard.*run a newer switchboard"):
        await copy_sqlite_to_postgres(source, url, schema=schema, actor="cli:t")
    with pytest.raises(StoreError, match="no SQLite store"):
        await copy_sqlite_to_postgres(tmp_path / "none.db", url, schema=schema, actor="cli:t")


async def test_checkpoints_are_not_copied_into_a_saver_that_holds_some(
    tmp_path: Path, pg: tuple[str, str]
) -> None:
    url, schema = pg
    async with EmbeddedBackend(offline_settings(tmp_path)) as agent:
        await collect(agent.run(await agent.create_thread(), turn("hello")))
    first = await copy_checkpoints(tmp_path / "agent.db", url, schema)
    assert first.checkpoints > 0
    with pytest.raises(ValueError, match="holds agent checkpoints already"):
        await copy_checkpoints(tmp_path / "agent.db", url, schema)
    none = await copy_checkpoints(tmp_path / "missing.db", url, schema)
    assert (none.threads, none.checkpoints) == (0, 0)
