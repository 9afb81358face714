"""The kernel's loops never end unnoticed: a busy store is waited out, a death stops the
daemon with status 75 for systemd to restart it."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from bot.backoff import Backoff
from bot.errors import StoreBusy
from bot.exit_codes import EXIT_TEMPFAIL
from bot.ops.kernel_tasks import KernelTasks
from tests.bot.harness import http_get, make_settings, running
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import FakeChannel, dm

QUICK = Backoff(base_s=0.001, cap_s=0.01)


async def test_a_busy_store_is_waited_out_and_the_loop_starts_again() -> None:
    deaths: list[str] = []
    runs = 0

    async def loop() -> None:
        nonlocal runs
        runs += 1
        if runs <= 2:
            raise StoreBusy("database is locked")

    tasks = KernelTasks(deaths.append, QUICK)
    await asyncio.wait_for(tasks.start("router", loop), 5)
    assert runs == 3
    assert deaths == []
    assert tasks.problems() == []


async def test_stop_ends_a_loop_that_swallowed_its_cancellation() -> None:
    """As Python 3.11's ``wait_for`` can inside psycopg_pool: the loop goes on to its next
    round (a long sleep) instead of ending; ``stop`` cancels it again."""
    rounds = 0
    swallowed = asyncio.Event()

    async def loop() -> None:
        nonlocal rounds
        while True:
            rounds += 1
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                if swallowed.is_set():
                    raise
                swallowed.set()
                asyncio.current_task().uncancel()  # type: ignore[union-attr]

    tasks = KernelTasks(lambda _name: None, QUICK)
    task = tasks.start("housekeeping", loop)
    await asyncio.sleep(0)
    await asyncio.wait_for(tasks.stop(), 5)
    assert task.cancelled()
    assert swallowed.is_set()
    assert rounds == 2


async def test_a_death_is_logged_reported_and_never_silent(
    caplog: pytest.LogCaptureFixture,
) -> None:
    deaths: list[str] = []

    async def loop() -> None:
        raise RuntimeError("bug in the dispatch loop")

    tasks = KernelTasks(deaths.append, QUICK)
    with caplog.at_level(logging.ERROR, logger="bot.ops.kernel_tasks"):
        await asyncio.wait_for(tasks.start("outbox", loop), 5)
    assert deaths == ["outbox"]
    assert tasks.problems() == ["kernel task outbox: died"]
    (record,) = caplog.records
    assert record.exc_info is not None  # with its traceback


async def test_a_dead_kernel_loop_stops_the_daemon_with_status_75(tmp_path: Path) -> None:
    channel, agent = FakeChannel(), FakeAgent()
    died = asyncio.Event()

    async def broken() -> None:
        await died.wait()
        raise RuntimeError("bug")

    async with running(make_settings(tmp_path), [channel], agent) as daemon:
        await channel.inject(dm("hi", message_id="1"))
        await channel.wait_text("echo: hi")
        daemon.daemon.kernel_tasks.start("probe", broken)
        status, body = await http_get(daemon.daemon, "/readyz")
        assert status == 200, body
        died.set()
        async with asyncio.timeout(10):
            assert await daemon.task == EXIT_TEMPFAIL
    assert daemon.daemon.kernel_tasks.problems() == ["kernel task probe: died"]
