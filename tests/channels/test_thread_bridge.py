"""The bridge between an SDK's own thread and the daemon loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

import pytest
from typing_extensions import override

from bot.messages import InboundMessage
from bot.ports import Admission
from channels.thread_bridge import LoopThreadError, ThreadBridge
from tests.channels.health_log import HealthLog
from tests.fakes.channel import dm

T = TypeVar("T")


class RecordingIntake:
    """A ``Publish`` that notes which thread journaled what, or never answers."""

    def __init__(self, *, hang: bool = False) -> None:
        self.seen: list[tuple[str, int]] = []
        self.hang = hang
        self.cancelled = asyncio.Event()

    async def __call__(self, message: InboundMessage) -> Admission:
        (admission,) = await self.many([message])
        return admission

    async def many(self, messages: Sequence[InboundMessage]) -> list[Admission]:
        if self.hang:
            try:
                await asyncio.Event().wait()
            finally:
                self.cancelled.set()
        self.seen += [(m.message_id, threading.get_ident()) for m in messages]
        return [Admission.ACCEPTED] * len(messages)


async def _on_sdk_thread(work: Callable[[], T]) -> T:
    """Run ``work`` on a thread that is not the loop's, as an SDK callback would."""
    return await asyncio.to_thread(work)


async def test_publish_blocks_the_sdk_thread_until_the_loop_journaled_it() -> None:
    intake, health = RecordingIntake(), HealthLog()
    bridge = ThreadBridge(asyncio.get_running_loop(), intake, health)
    admission = await _on_sdk_thread(lambda: bridge.publish(dm("hi", message_id="m1")))
    assert admission is Admission.ACCEPTED
    assert intake.seen == [("m1", threading.get_ident())]  # journaled on the loop's thread
    batch = await _on_sdk_thread(
        lambda: bridge.publish_many([dm("a", message_id="m2"), dm("b", message_id="m3")])
    )
    assert batch == [Admission.ACCEPTED, Admission.ACCEPTED]
    assert await _on_sdk_thread(lambda: bridge.publish_many([])) == []


async def test_an_intake_that_does_not_answer_leaves_the_event_unacknowledged() -> None:
    intake = RecordingIntake(hang=True)
    bridge = ThreadBridge(asyncio.get_running_loop(), intake, HealthLog(), publish_timeout_s=0.1)
    admission = await _on_sdk_thread(lambda: bridge.publish(dm("hi", message_id="m1")))
    assert admission is Admission.CLOSED
    assert not admission.ack
    async with asyncio.timeout(5):
        await intake.cancelled.wait()  # the abandoned journal write does not linger


def test_a_closed_daemon_loop_refuses_instead_of_hanging() -> None:
    loop = asyncio.new_event_loop()
    loop.close()
    health = HealthLog()
    bridge = ThreadBridge(loop, RecordingIntake(), health)
    assert bridge.publish(dm("hi", message_id="m1")) is Admission.CLOSED
    bridge.connected()  # nobody left to tell: dropped quietly
    assert health.events == []


async def test_health_reports_arrive_on_the_daemon_loop() -> None:
    loop_thread = threading.get_ident()
    threads: list[int] = []

    class ThreadNotingHealth(HealthLog):
        @override
        def _note(self, kind: str, reason: str = "") -> None:
            threads.append(threading.get_ident())
            super()._note(kind, reason)

    health = ThreadNotingHealth()
    bridge = ThreadBridge(asyncio.get_running_loop(), RecordingIntake(), health)

    def report() -> None:
        bridge.connected()
        bridge.disconnected("socket closed")
        bridge.auth_failed("app secret refused")
        bridge.activity()
        bridge.failed("gave up reconnecting")

    await _on_sdk_thread(report)
    await health.wait_for("failed")
    assert health.events == [
        ("connected", ""),
        ("disconnected", "socket closed"),
        ("auth_failed", "app secret refused"),
        ("failed", "gave up reconnecting"),
    ]
    assert health.activity_count == 1
    assert set(threads) == {loop_thread}


async def test_blocking_calls_refuse_to_run_on_the_daemon_loop() -> None:
    bridge = ThreadBridge(asyncio.get_running_loop(), RecordingIntake(), HealthLog())
    with pytest.raises(LoopThreadError):
        bridge.publish(dm("hi", message_id="m1"))


async def test_call_returns_the_coroutines_result_or_times_out() -> None:
    bridge = ThreadBridge(asyncio.get_running_loop(), RecordingIntake(), HealthLog())

    async def answer() -> int:
        return 42

    assert await _on_sdk_thread(lambda: bridge.call(answer(), timeout=5)) == 42
    with pytest.raises(TimeoutError):
        await _on_sdk_thread(lambda: bridge.call(asyncio.Event().wait(), timeout=0.05))
