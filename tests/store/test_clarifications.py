"""Pending clarifications: FIFO per user and chat, answered once, expired on time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from bot.errors import StoreError
from bot.messages import ChatType, ConversationKey
from bot.records import Clarification, ClarificationState
from tests.store.support import START, BackendStore, StoreFactory, key

TTL = timedelta(minutes=10)


def question(
    clarification_id: str,
    *,
    asked: datetime = START,
    conversation: ConversationKey | None = None,
    user: str = "u1",
    ttl: timedelta = TTL,
) -> Clarification:
    return Clarification(
        id=clarification_id,
        key=conversation if conversation is not None else key(topic_id="root"),
        chat_type=ChatType.GROUP,
        thread_id="t1",
        asked_user_id=user,
        question=f"question {clarification_id}?",
        options=("yes", "no"),
        question_message_id=None,
        created_at=asked,
        expires_at=asked + ttl,
    )


async def test_a_clarification_round_trips(store: BackendStore) -> None:
    original = question("q1")
    await store.clarifications.add(original)
    assert await store.clarifications.get("q1") == original
    assert await store.clarifications.get("nope") is None
    with pytest.raises(StoreError):
        await store.clarifications.add(original)


async def test_times_keep_their_microseconds_and_come_back_in_utc(store: BackendStore) -> None:
    asked = datetime(2025, 3, 1, 14, 0, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
    original = question("q1", asked=asked)
    await store.clarifications.add(original)
    found = await store.clarifications.get("q1")
    assert found == original
    assert found.created_at.tzinfo is UTC
    assert (found.created_at.hour, found.created_at.microsecond) == (12, 123456)
    with pytest.raises(ValueError, match="naive"):
        await store.clarifications.add(question("q2", asked=asked.replace(tzinfo=None)))


async def test_pending_for_user_is_fifo_and_scoped_to_user_and_chat(store: BackendStore) -> None:
    # Added out of order on purpose: FIFO follows when they were asked.
    await store.clarifications.add(question("q2", asked=START + timedelta(seconds=2)))
    await store.clarifications.add(question("q1", asked=START + timedelta(seconds=1)))
    await store.clarifications.add(question("other-user", user="u2"))
    await store.clarifications.add(question("other-chat", conversation=key("c2")))
    await store.clarifications.add(question("same-chat-no-topic", conversation=key()))

    pending = await store.clarifications.pending_for_user(
        "telegram", "", "c1", "u1", START + timedelta(seconds=5)
    )
    # Any topic of the same chat counts: the answer may come as a plain message.
    assert [c.id for c in pending] == ["same-chat-no-topic", "q1", "q2"]


async def test_expired_questions_are_not_pending_for_the_user(store: BackendStore) -> None:
    await store.clarifications.add(question("q1"))
    await store.clarifications.add(question("q2", asked=START + timedelta(minutes=5)))
    after_first_expiry = START + TTL
    pending = await store.clarifications.pending_for_user(
        "telegram", "", "c1", "u1", after_first_expiry
    )
    assert [c.id for c in pending] == ["q2"]


async def test_resolve_answers_exactly_once(store: BackendStore) -> None:
    await store.clarifications.add(question("q1"))
    assert await store.clarifications.resolve("q1", "yes")
    assert not await store.clarifications.resolve("q1", "no")
    assert not await store.clarifications.resolve("unknown", "no")
    answered = await store.clarifications.get("q1")
    assert answered is not None
    assert (answered.state, answered.answer) == (ClarificationState.ANSWERED, "yes")
    assert await store.clarifications.pending_for_user("telegram", "", "c1", "u1", START) == []


async def test_expire_due_moves_overdue_questions_once(store: BackendStore) -> None:
    await store.clarifications.add(question("q1"))
    await store.clarifications.add(question("q2", asked=START + timedelta(seconds=1)))
    await store.clarifications.add(question("late", asked=START + timedelta(hours=1)))
    await store.clarifications.add(question("answered"))
    await store.clarifications.resolve("answered", "yes")

    expired = await store.clarifications.expire_due(START + TTL + timedelta(seconds=1))
    assert [c.id for c in expired] == ["q1", "q2"]
    assert all(c.state is ClarificationState.EXPIRED for c in expired)
    assert await store.clarifications.expire_due(START + TTL + timedelta(seconds=1)) == []
    assert not await store.clarifications.resolve("q1", "too late")
    stored = await store.clarifications.get("q2")
    assert stored is not None
    assert stored.state is ClarificationState.EXPIRED
    answered = await store.clarifications.get("answered")
    assert answered is not None
    assert answered.state is ClarificationState.ANSWERED


async def test_question_message_lookup(store: BackendStore) -> None:
    await store.clarifications.add(question("q1"))
    assert await store.clarifications.by_question_message("telegram", "", "c1", "sent-9") is None
    await store.clarifications.set_question_message("q1", "sent-9")
    found = await store.clarifications.by_question_message("telegram", "", "c1", "sent-9")
    assert found is not None
    assert found.id == "q1"
    assert found.question_message_id == "sent-9"
    assert await store.clarifications.by_question_message("telegram", "", "c2", "sent-9") is None


async def test_pending_for_key_and_cancel_for_key(store: BackendStore) -> None:
    topic = key(topic_id="root")
    await store.clarifications.add(question("q1", conversation=topic))
    await store.clarifications.add(question("q2", conversation=topic, user="u2"))
    await store.clarifications.add(question("elsewhere", conversation=key()))
    assert [c.id for c in await store.clarifications.pending_for_key(topic)] == ["q1", "q2"]

    assert await store.clarifications.cancel_for_key(topic) == 2
    assert await store.clarifications.pending_for_key(topic) == []
    cancelled = await store.clarifications.get("q1")
    assert cancelled is not None
    assert cancelled.state is ClarificationState.CANCELLED
    assert [c.id for c in await store.clarifications.pending_for_key(key())] == ["elsewhere"]


async def test_cancel_takes_one_pending_question_only(store: BackendStore) -> None:
    topic = key(topic_id="root")
    await store.clarifications.add(question("q1", conversation=topic))
    await store.clarifications.add(question("q2", conversation=topic, user="u2"))
    assert await store.clarifications.cancel("q1")
    assert not await store.clarifications.cancel("q1")  # no longer pending
    assert not await store.clarifications.cancel("nope")
    assert [c.id for c in await store.clarifications.pending_for_key(topic)] == ["q2"]
    cancelled = await store.clarifications.get("q1")
    assert cancelled is not None
    assert cancelled.state is ClarificationState.CANCELLED


async def test_a_pending_clarification_survives_a_restart(make_store: StoreFactory) -> None:
    async with make_store() as store:
        await store.clarifications.add(question("q1"))
    async with make_store() as store:
        pending = await store.clarifications.pending_for_user("telegram", "", "c1", "u1", START)
        assert [c.id for c in pending] == ["q1"]
        assert pending[0].expires_at == START + TTL
        assert pending[0].created_at.tzinfo is UTC
        assert await store.clarifications.resolve("q1", "yes")
