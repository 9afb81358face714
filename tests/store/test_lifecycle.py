"""Every backend's lifecycle: opening and closing, failed and cancelled writes, and two stores
working on one state at once (the CLI beside the daemon, or two replicas)."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta

import pytest

from bot.errors import StoreError
from bot.records import InboundStatus, OutboxState, PairingRequest
from tests.store.support import (
    BackendStore,
    ManualClock,
    StoreFactory,
    enqueue,
    inbound,
    item,
    journal_entry,
    key,
    record,
)


def _pairing(clock: ManualClock, code: str) -> PairingRequest:
    return PairingRequest(
        channel="telegram", user_id="u1", display_name="Ada", chat_id="c1", code=code,
        created_at=clock.now, expires_at=clock.now + timedelta(hours=1),
    )  # fmt: skip


async def test_reopening_keeps_the_data_and_migrates_nothing_again(
    make_store: StoreFactory,
) -> None:
    async with make_store() as store:
        await store.settings.set("paused", "yes")
    # Reopening must not re-run the first migration (it would fail on CREATE TABLE).
    for _ in range(2):
        async with make_store() as store:
            assert await store.settings.get("paused") == "yes"


async def test_writable_is_true_when_open_and_false_when_closed(make_store: StoreFactory) -> None:
    store = make_store()
    assert not await store.writable()
    await store.open()
    await store.open()  # idempotent
    assert await store.writable()
    assert await store.writable()
    await store.aclose()
    await store.aclose()  # idempotent
    assert not await store.writable()


async def test_use_after_close_is_a_store_error(make_store: StoreFactory) -> None:
    async with make_store() as store:
        pass
    with pytest.raises(StoreError, match="not open"):
        await store.settings.get("x")


async def test_a_failed_transaction_rolls_back_and_the_store_keeps_working(
    store: BackendStore, clock: ManualClock
) -> None:
    """A constraint violation inside a transaction becomes StoreError and leaves no open tx."""
    request = _pairing(clock, "ABC123")
    await store.access.add_pairing(request)
    with pytest.raises(StoreError, match=r"(?i)unique"):
        await store.access.add_pairing(request)
    await store.settings.set("after", "ok")
    assert await store.settings.get("after") == "ok"
    assert await store.writable()


async def test_a_statement_issued_during_a_failing_transaction_is_not_rolled_back_with_it(
    store: BackendStore, clock: ManualClock
) -> None:
    """Single statements never land inside a transaction another coroutine has open."""
    request = _pairing(clock, "DUP123")
    await store.access.add_pairing(request)
    failing, during = await asyncio.gather(
        store.access.add_pairing(request),  # opens its transaction first, then fails
        store.settings.set("during", "kept"),
        return_exceptions=True,
    )
    assert isinstance(failing, StoreError)
    assert during is None
    assert await store.settings.get("during") == "kept"


@pytest.mark.parametrize("yields", [0, 1, 10, 50, 100, 200, 400, 800, 1200, 1600, 3200])
async def test_cancelling_a_write_leaves_all_or_nothing_and_a_usable_store(
    store: BackendStore, yields: int
) -> None:
    """A transaction cancelled at any point is rolled back, and the next one still works."""
    batch = [item(f"k{n}") for n in range(20)]
    task = asyncio.create_task(enqueue(store, batch))
    for _ in range(yields):
        await asyncio.sleep(0)  # pick a cancellation point; nothing is waited for
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    pending = (await store.outbox.counts())[OutboxState.PENDING]
    assert pending in (0, 20)
    assert len(await enqueue(store, [*batch, item("after")])) == 21
    assert (await store.outbox.counts())[OutboxState.PENDING] == 21


async def test_marks_made_together_each_wait_for_their_own_write(store: BackendStore) -> None:
    ids = [await record(store, inbound(f"m{n}"), f"corr-{n}") for n in range(5)]
    entries = {f"m{n}": entry_id for n, entry_id in enumerate(ids) if entry_id is not None}

    async def mark(message_id: str, entry_id: int) -> InboundStatus:
        await store.inbound.update(entry_id, InboundStatus.HANDLED, reason=f"r{entry_id}")
        found = await journal_entry(store, message_id)  # written by the time update returns
        assert found is not None
        return found.status

    assert (
        await asyncio.gather(
            *(mark(message_id, entry_id) for message_id, entry_id in entries.items())
        )
        == [InboundStatus.HANDLED] * 5
    )


# --------------------------------------------------------------------------- two stores


async def test_a_second_store_reads_and_writes_while_the_first_writes(
    make_store: StoreFactory,
) -> None:
    async with make_store() as daemon, make_store() as cli:

        async def daemon_work() -> None:
            for n in range(30):
                await enqueue(daemon, [item(f"d{n}")])
                await record(daemon, inbound(f"m{n}"), f"corr-{n}")

        async def cli_work() -> list[int]:
            seen: list[int] = []
            for n in range(30):
                seen.append((await cli.outbox.counts())[OutboxState.PENDING])
                await cli.audit.record("cli", "probe", str(n))
            return seen

        _, seen = await asyncio.gather(daemon_work(), cli_work())
        assert seen == sorted(seen)  # the reader only ever sees committed, growing state
        assert (await cli.outbox.counts())[OutboxState.PENDING] == 30
        assert len(await cli.inbound.unfinished()) == 30
        assert len(await daemon.audit.recent(limit=100)) == 30


async def test_two_stores_binding_one_new_key_agree_on_one_thread(
    make_store: StoreFactory,
) -> None:
    async with make_store() as first, make_store() as second:
        results = await asyncio.gather(
            *(
                (first if n % 2 else second).conversations.bind(key(), f"thread-{n}")
                for n in range(20)
            )
        )
        assert len({c.thread_id for c in results}) == 1
        assert await first.conversations.count() == 1


async def test_two_stores_rotating_one_key_take_turns(make_store: StoreFactory) -> None:
    async with make_store() as first, make_store() as second:
        await first.conversations.bind(key(), "t0")
        rotated = await asyncio.gather(
            *(
                (first if n % 2 else second).conversations.rotate(key(), f"t{n}")
                for n in range(1, 11)
            )
        )
        assert sorted(c.thread_id for c in rotated) == sorted(f"t{n}" for n in range(1, 11))
        assert await first.conversations.count() == 1
        active = await second.conversations.active(key())
        assert active is not None
        assert active.thread_id in {c.thread_id for c in rotated}
