"""Group scopes (design §4), uploads (§6), crash recovery and the instance lock (design §11)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.app import Daemon, DaemonOptions, Overrides
from bot.config.settings import BusyPolicy
from bot.errors import InstanceLocked
from bot.exit_codes import EXIT_TEMPFAIL
from bot.messages import (
    Attachment,
    AttachmentKind,
    ConversationKey,
    OutboundKind,
    TextEdit,
)
from bot.metrics import Counters
from bot.ops.instance_lock import InstanceLock
from bot.pipeline.bus import Accepted, InboundBus
from bot.pipeline.intake import Intake
from bot.pipeline.lanes import TurnRequest
from bot.pipeline.sessions import destination_for
from bot.pipeline.turn_marks import MAX_INTERRUPTED_RUNS, TurnMark
from bot.ports import Admission, ChannelCapabilities
from bot.records import InboundStatus
from store.sqlite import SqliteStore
from tests.bot.harness import make_settings, running
from tests.bot.pipeline.crashed import journal_running_turn, recorded_before_the_crash
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import FakeChannel, dm, group
from tests.store.support import record


@pytest.mark.parametrize(
    ("scope", "expected_threads"),
    [
        # alice top-level, alice in alice's topic, bob top-level, bob in alice's topic
        ("topic", ["t1", "t1", "t2", "t1"]),
        ("chat", ["t1", "t1", "t1", "t1"]),
        ("user", ["t1", "t1", "t2", "t2"]),
    ],
)
async def test_group_scopes(tmp_path: Path, scope: str, expected_threads: list[str]) -> None:
    settings = make_settings(
        tmp_path, conversations={"group_scope": scope}, access={"group_policy": "all"}
    )
    channel, agent = FakeChannel(), FakeAgent()
    async with running(settings, [channel], agent) as daemon:
        messages = [
            group("a1", message_id="1", user="alice"),
            group("a2", message_id="2", user="alice", thread_root_id="1"),
            group("b1", message_id="3", user="bob"),
            group("b2", message_id="4", user="bob", thread_root_id="1"),
        ]
        for index, message in enumerate(messages, 1):
            await channel.inject(message)
            await channel.wait_text(f"echo: {message.text}")
            await daemon.kernel.conversations.lanes.wait_idle()
            assert index == len(agent.runs)
    assert [run.thread_id for run in agent.runs] == expected_threads


async def test_topic_scope_without_platform_threads_is_per_user(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, access={"group_policy": "all"})
    channel, agent = FakeChannel(caps=ChannelCapabilities(text_limit=4000)), FakeAgent()
    async with running(settings, [channel], agent) as daemon:
        await channel.inject(group("one", message_id="1", user="alice"))
        await channel.wait_text("echo: one")
        await channel.inject(group("two", message_id="2", user="alice"))
        await channel.wait_text("echo: two")
        conversation = await daemon.kernel.store.conversations.active(
            ConversationKey(channel="fake", chat_id="g1", user_id="alice")
        )
    assert conversation is not None
    assert [run.thread_id for run in agent.runs] == ["t1", "t1"]


async def test_attachments_are_saved_to_uploads_and_named_in_the_turn(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, agent={"max_upload_bytes": 10})
    channel, agent = FakeChannel(), FakeAgent()
    channel.files = {"ref-1": b"a,b\n1,2\n", "ref-2": b"x" * 50}
    attachments = (
        Attachment(kind=AttachmentKind.FILE, name="../data.csv", mime="text/csv", ref="ref-1"),
        Attachment(kind=AttachmentKind.FILE, name="big.bin", ref="ref-2"),
        Attachment(kind=AttachmentKind.IMAGE, name="gone.png", ref="missing"),
    )
    async with running(settings, [channel], agent):
        await channel.inject(dm("see files", message_id="1", attachments=attachments))
        await channel.wait_text("echo: see files")
    turn = agent.runs[0].turn
    (upload,) = turn.uploads
    assert upload.name == "data.csv"
    assert upload.path == settings.state_dir.resolve() / "threads/t1/uploads/data.csv"
    assert upload.path.read_bytes() == b"a,b\n1,2\n"
    assert len(turn.notes) == 2
    assert any("big.bin" in note for note in turn.notes)
    assert any("gone.png" in note for note in turn.notes)


async def test_unfinished_turn_is_resumed_once_after_a_crash(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    await journal_running_turn(settings.state_dir, "interrupted question")
    channel, agent = FakeChannel(), FakeAgent()
    async with running(settings, [channel], agent) as daemon:
        await channel.wait_text("Resuming after a restart")
        await channel.wait_text("echo: interrupted question")
        await daemon.kernel.conversations.lanes.wait_idle()
        (entry,) = await daemon.kernel.store.inbound.find("fake", "1")
    assert entry.status is InboundStatus.HANDLED
    assert len(agent.runs) == 1


async def test_a_placeholder_left_by_the_crash_is_finished_not_left_thinking(
    tmp_path: Path,
) -> None:
    settings = make_settings(tmp_path)
    await journal_running_turn(settings.state_dir, "interrupted question")
    async with SqliteStore.from_state_dir(settings.state_dir) as store:
        await recorded_before_the_crash(
            store, "corr1/placeholder/0", "Let me think ▍", OutboundKind.PROGRESS, "b-old"
        )
    channel, agent = FakeChannel(), FakeAgent()
    async with running(settings, [channel], agent):
        await channel.wait_text("echo: interrupted question")
        edit = await channel.wait_text("Interrupted by a restart")
    assert isinstance(edit.delivery, TextEdit)
    assert edit.delivery.message_id == "b-old"


async def test_a_message_whose_run_was_interrupted_four_times_gets_an_apology(
    tmp_path: Path,
) -> None:
    settings = make_settings(tmp_path)
    await journal_running_turn(settings.state_dir, "cursed")
    async with SqliteStore.from_state_dir(settings.state_dir) as store:
        (entry,) = await store.inbound.find("fake", "1")
        # In its agent run, after three crashes counted: this fourth one gives it up.
        mark = TurnMark(turn="corr1", agent_started=True, interrupted=MAX_INTERRUPTED_RUNS - 1)
        await store.inbound.update(entry.id, InboundStatus.RUNNING, reason=mark.encode())
        # The first restart's "Resuming" notice: the apology must not be mistaken for it.
        await recorded_before_the_crash(
            store, "corr1/recovery/0", "🔄 Resuming after a restart…", OutboundKind.NOTICE,
            "b-resume",
        )  # fmt: skip
    channel, agent = FakeChannel(), FakeAgent()
    async with running(settings, [channel], agent):
        await channel.wait_text("could not be answered after a restart")
    assert agent.runs == []


async def test_single_instance_lock(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    with InstanceLock(settings.state_dir), pytest.raises(InstanceLocked, match="already running"):
        InstanceLock(settings.state_dir).acquire()
    with InstanceLock(settings.state_dir):
        daemon = Daemon(
            settings,
            DaemonOptions(overrides=Overrides(channels=[FakeChannel()], agent=FakeAgent())),
        )
        assert await daemon.run() == EXIT_TEMPFAIL


def test_bus_refuses_beyond_capacity() -> None:
    bus = InboundBus(capacity=1)
    assert bus.reserve()
    assert not bus.reserve()
    bus.release()
    assert bus.reserve()


async def test_full_queue_rejects_before_journaling(tmp_path: Path) -> None:
    async with SqliteStore.from_state_dir(tmp_path) as store:
        bus = InboundBus(capacity=1)
        intake = Intake(store, bus, Counters())
        assert await intake.publish(dm("one", message_id="1")) is Admission.ACCEPTED
        assert await intake.publish(dm("two", message_id="2")) is Admission.QUEUE_FULL
        assert not Admission.QUEUE_FULL.ack
        # Nothing was recorded for the refused message, so its redelivery is accepted later.
        assert await store.inbound.find("fake", "2") == []
        await bus.get()
        assert await intake.publish(dm("two", message_id="2")) is Admission.ACCEPTED


async def test_a_batch_is_admitted_in_order_up_to_the_first_refusal(tmp_path: Path) -> None:
    """A platform batch: one journal write; a repeat within it is a duplicate; once the queue
    is full every later message is refused too, so their redelivery keeps the order."""
    async with SqliteStore.from_state_dir(tmp_path) as store:
        bus = InboundBus(capacity=3)
        intake = Intake(store, bus, Counters())
        batch = [dm(text, message_id=mid) for text, mid in
                 [("a", "1"), ("b", "2"), ("a again", "1"), ("c", "3"), ("d", "4")]]  # fmt: skip
        admissions = await intake.many(batch)
        assert admissions == [
            Admission.ACCEPTED, Admission.ACCEPTED, Admission.DUPLICATE,
            Admission.QUEUE_FULL, Admission.QUEUE_FULL,
        ]  # fmt: skip
        assert [(await bus.get()).message.text for _ in range(2)] == ["a", "b"]
        assert await store.inbound.find("fake", "3") == []
        assert await intake.many(batch[3:]) == [Admission.ACCEPTED, Admission.ACCEPTED]
        assert [(await bus.get()).message.text for _ in range(2)] == ["c", "d"]


async def test_a_fresh_message_merged_into_a_resumed_turn_keeps_its_one_rerun(
    tmp_path: Path,
) -> None:
    """A recovered message and a new one that queued with it run as one turn. Each keeps its
    own count of interrupted runs: the new one was never interrupted (design §11)."""
    channel, agent = FakeChannel(), FakeAgent()
    async with running(make_settings(tmp_path), [channel], agent) as daemon:
        store = daemon.kernel.store
        recovered, fresh = dm("interrupted", message_id="1"), dm("new one", message_id="2")
        first = await record(store, recovered, "c1")
        second = await record(store, fresh, "c2")
        assert first is not None
        assert second is not None
        key = ConversationKey(channel="fake", chat_id="dm-alice")
        items = (
            Accepted(
                entry_id=first,
                message=recovered,
                correlation_id="c1",
                recovered=True,
                interrupted=1,
            ),
            Accepted(entry_id=second, message=fresh, correlation_id="c2"),
        )
        release = agent.hold("new one")
        request = TurnRequest(key=key, destination=destination_for(fresh, key), items=items)
        daemon.kernel.conversations.lanes.submit(request, BusyPolicy.QUEUE)
        await agent.wait_runs(1)
        reasons = [(await store.inbound.find("fake", m))[0].reason or "" for m in ("1", "2")]
        release.set()
        await channel.wait_text("echo: interrupted")
    assert TurnMark.parse(reasons[0]) == TurnMark(turn="c2", agent_started=True, interrupted=1)
    assert TurnMark.parse(reasons[1]) == TurnMark(turn="c2", agent_started=True)
