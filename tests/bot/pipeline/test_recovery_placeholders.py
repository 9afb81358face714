"""A placeholder the crashed process recorded but never saw sent (design §11).

The platform may have taken it just before the kill. Where sends are idempotent it is sent
again under its key once the channel runs (the platform answers with the message it took, or
posts the interrupted notice), then edited to the interrupted text, before anything else of its
chat goes out; elsewhere it is withdrawn as before.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from bot.messages import OutboundKind, OutboundText, TextEdit
from bot.pipeline.recovery import INTERRUPTED_PLACEHOLDER, RESUMING_NOTICE, WITHDRAWN
from bot.ports import FinalAnswer, TextDelta
from bot.records import InboundStatus, OutboxState
from store.sqlite import SqliteStore
from tests.bot.harness import make_settings, routed, running
from tests.bot.pipeline.crashed import CHAT, journal_running_turn, recorded_before_the_crash
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import AUTH_FAILED, DEFAULT_CAPS, FakeChannel, Sent
from tests.fakes.scripted_agent import ScriptedAgent

IDEMPOTENT = replace(DEFAULT_CAPS, idempotent_sends=True)
PLACEHOLDER_KEY = "corr1/placeholder/0"


async def _left_pending(state_dir: Path) -> int:
    """The crashed turn and its placeholder row, recorded but never marked sent."""
    await journal_running_turn(state_dir, "interrupted question")
    async with SqliteStore.from_state_dir(state_dir) as store:
        row = await recorded_before_the_crash(
            store, PLACEHOLDER_KEY, "Let me think ▍", OutboundKind.PROGRESS
        )
    return row.id


def _is_interrupted_edit(sent: Sent) -> bool:
    return isinstance(sent.delivery, TextEdit) and sent.delivery.text == INTERRUPTED_PLACEHOLDER


def _index(channel: FakeChannel, text: str) -> int:
    """Where the message showing ``text`` was posted among the channel's operations."""
    return next(
        i
        for i, s in enumerate(channel.sent)
        if isinstance(s.delivery, OutboundText) and text in s.text and not s.repeat
    )


async def test_a_placeholder_the_platform_took_before_the_kill_is_finished_once(
    tmp_path: Path,
) -> None:
    settings = make_settings(tmp_path)
    row_id = await _left_pending(settings.state_dir)
    channel, agent = FakeChannel(caps=IDEMPOTENT), FakeAgent()
    channel.taken[PLACEHOLDER_KEY] = "b-old"  # the platform took it; the process never knew
    async with running(settings, [channel], agent) as daemon:
        await channel.wait_text("echo: interrupted question")
        await channel.wait_for(_is_interrupted_edit)
        await daemon.kernel.conversations.lanes.wait_idle()
        await daemon.kernel.delivery.outbox.wait_idle()
        row = await daemon.kernel.store.outbox.get(row_id)
    edits = [s for s in channel.sent if _is_interrupted_edit(s)]
    [resend] = [s for s in channel.sent if s.repeat]
    assert [s.delivery.message_id for s in edits if isinstance(s.delivery, TextEdit)] == ["b-old"]
    assert isinstance(resend.delivery, OutboundText)
    assert resend.delivery.dedupe_key == PLACEHOLDER_KEY
    assert resend.message_id == "b-old"
    # Nothing new was posted for it, and nothing of the chat went out before it.
    assert [s for s in channel.sent if isinstance(s.delivery, OutboundText) and not s.repeat
            and s.text == INTERRUPTED_PLACEHOLDER] == []  # fmt: skip
    assert channel.sent.index(resend) < _index(channel, RESUMING_NOTICE)
    assert channel.sent.index(resend) < _index(channel, "echo: interrupted question")
    assert channel.sent.index(resend) < channel.sent.index(edits[0])
    assert row is not None
    assert (row.state, row.sent_message_ids) == (OutboxState.SENT, ("b-old",))
    assert len(agent.runs) == 1


async def test_a_placeholder_the_platform_never_took_is_posted_before_the_answer(
    tmp_path: Path,
) -> None:
    settings = make_settings(tmp_path)
    await _left_pending(settings.state_dir)
    channel, agent = FakeChannel(caps=IDEMPOTENT), FakeAgent()
    async with running(settings, [channel], agent) as daemon:
        await channel.wait_text("echo: interrupted question")
        await channel.wait_for(_is_interrupted_edit)
        await daemon.kernel.delivery.outbox.wait_idle()
    posted = _index(channel, INTERRUPTED_PLACEHOLDER)
    notice = channel.sent[posted]
    assert isinstance(notice.delivery, OutboundText)
    assert notice.delivery.kind is OutboundKind.NOTICE  # never a second live placeholder
    assert [s.message_id for s in channel.sent if s.repeat] == []
    assert posted < _index(channel, RESUMING_NOTICE) < _index(channel, "echo: interrupted")
    assert channel.texts().count(INTERRUPTED_PLACEHOLDER) == 2  # posted, then the same edit
    [edit] = [s.delivery for s in channel.sent if _is_interrupted_edit(s)]
    assert isinstance(edit, TextEdit)
    assert edit.message_id == notice.message_id


async def test_without_idempotent_sends_a_pending_placeholder_is_withdrawn(
    tmp_path: Path,
) -> None:
    settings = make_settings(tmp_path)
    row_id = await _left_pending(settings.state_dir)
    channel, agent = FakeChannel(), FakeAgent()
    async with running(settings, [channel], agent) as daemon:
        await channel.wait_text("echo: interrupted question")
        await daemon.kernel.delivery.outbox.wait_idle()
        row = await daemon.kernel.store.outbox.get(row_id)
    assert row is not None
    assert (row.state, row.last_error) == (OutboxState.DEAD, WITHDRAWN)
    assert not any(INTERRUPTED_PLACEHOLDER in s.text or "Let me think" in s.text
                   for s in channel.sent)  # fmt: skip


async def test_a_parked_channel_keeps_the_placeholder_and_its_chat_waiting(
    tmp_path: Path,
) -> None:
    """Nothing is lost or retried while the channel cannot run; once it does, the placeholder
    is finished first and the chat's queue follows."""
    settings = make_settings(tmp_path)
    row_id = await _left_pending(settings.state_dir)
    channel, agent = FakeChannel(caps=IDEMPOTENT), FakeAgent()
    channel.taken[PLACEHOLDER_KEY] = "b-old"
    channel.start_failures.append(AUTH_FAILED)
    async with running(settings, [channel], agent) as daemon:
        kernel = daemon.kernel
        await routed(kernel, 1)
        await kernel.conversations.lanes.wait_idle()  # the re-run answered into the outbox
        await kernel.delivery.outbox.wait_idle()  # nothing it may send now
        store = kernel.store.outbox
        waiting = [(r.item.idempotency_key, r.state) for r in await store.for_correlation("corr1")]
        tries = await store.attempts(row_id)
        assert channel.sent == []
        assert daemon.daemon.kernel_tasks.problems() == []
        assert daemon.daemon.supervision is not None
        daemon.daemon.supervision.wake_all()  # credentials fixed: the channel starts
        await channel.wait_text("echo: interrupted question")
        await channel.wait_for(_is_interrupted_edit)
    assert (PLACEHOLDER_KEY, OutboxState.PENDING) in waiting
    assert ("corr1/recovery/0", OutboxState.PENDING) in waiting
    assert tries == []
    assert channel.sent[0].repeat
    assert [s.delivery.message_id for s in channel.sent if isinstance(s.delivery, TextEdit)] == [
        "b-old"
    ]


async def test_a_placeholder_left_by_an_earlier_restart_is_still_finished(
    tmp_path: Path,
) -> None:
    """The restart that should have finished it stopped first (its channel never ran): the
    turn was answered meanwhile, but the pending placeholder is found again by the next start."""
    settings = make_settings(tmp_path)
    await _left_pending(settings.state_dir)
    async with SqliteStore.from_state_dir(settings.state_dir) as store:
        (entry,) = await store.inbound.find("fake", "1")
        await store.inbound.update(entry.id, InboundStatus.HANDLED, reason="answered")
    channel, agent = FakeChannel(caps=IDEMPOTENT), FakeAgent()
    channel.taken[PLACEHOLDER_KEY] = "b-old"
    async with running(settings, [channel], agent):
        edit = await channel.wait_for(_is_interrupted_edit)
    assert isinstance(edit.delivery, TextEdit)
    assert edit.delivery.message_id == "b-old"
    assert edit.delivery.destination.chat_id == CHAT
    assert agent.runs == []


async def test_a_rerun_that_streams_never_answers_before_the_interrupted_edit(
    tmp_path: Path,
) -> None:
    """The re-run keeps the turn's keys, so its placeholder is the left one. Streaming while
    recovery still holds that row, it learns nothing of it; whether its answer then replaces
    the placeholder or follows as a new message, it is shown once, after the interrupted edit."""
    settings = make_settings(tmp_path)
    await _left_pending(settings.state_dir)
    channel, agent = FakeChannel(caps=IDEMPOTENT), ScriptedAgent()
    channel.taken[PLACEHOLDER_KEY] = "b-old"
    channel.start_failures.append(AUTH_FAILED)
    async with running(settings, [channel], agent) as daemon:
        agent.feed(TextDelta(text="Streaming while the channel is parked"))
        assert daemon.daemon.supervision is not None
        daemon.daemon.supervision.wake_all()
        await channel.wait_for(_is_interrupted_edit)
        agent.feed(TextDelta(text=", and after"))
        agent.feed(FinalAnswer(text="final answer"))
        await channel.wait_text("final answer")
        await daemon.kernel.conversations.lanes.wait_idle()
        await daemon.kernel.delivery.outbox.wait_idle()
    answers = [i for i, s in enumerate(channel.sent) if s.text == "final answer"]
    [interrupted] = [i for i, s in enumerate(channel.sent) if _is_interrupted_edit(s)]
    assert len(answers) == 1
    assert answers[0] > interrupted
    assert channel.sent[0].repeat  # the left placeholder went first
