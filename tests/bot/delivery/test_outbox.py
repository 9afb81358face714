"""Delivery through the outbox: retries by error kind, fallbacks, restart, files (design §8)."""

from __future__ import annotations

from pathlib import Path

from bot.errors import (
    AgentError,
    Forbidden,
    InvalidRequest,
    MessageGone,
    RateLimited,
    TransientSendError,
)
from bot.messages import OutboundFile, OutboundText, RenderMode
from bot.ports import ChannelCapabilities, FinalAnswer, PresentedFile, TextDelta
from bot.records import InboundStatus, OutboxState
from bot.workspace import ThreadWorkspace
from tests.bot.harness import make_settings, routed, running
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import PLAIN_CAPS, FakeChannel, dm
from tests.fakes.scripted_agent import ScriptedAgent


async def test_transient_failure_is_retried(tmp_path: Path) -> None:
    channel, agent = FakeChannel(caps=PLAIN_CAPS), FakeAgent()
    channel.fail_next.append(TransientSendError("502 from platform"))
    async with running(make_settings(tmp_path), [channel], agent) as daemon:
        await channel.inject(dm("hi", message_id="1"))
        await channel.wait_text("echo: hi", within=10)
        # The send is marked after the platform took it.
        await daemon.kernel.delivery.outbox.wait_idle()
        rows = await daemon.kernel.store.outbox.listing()
    assert [row.state for row in rows] == [OutboxState.SENT]
    assert rows[0].attempts == 2


async def test_rate_limit_waits_the_platform_delay(tmp_path: Path) -> None:
    channel, agent = FakeChannel(caps=PLAIN_CAPS), FakeAgent()
    channel.fail_next.append(RateLimited("429", retry_after=0.2))
    async with running(make_settings(tmp_path), [channel], agent) as daemon:
        await channel.inject(dm("hi", message_id="1"))
        await channel.wait_text("echo: hi", within=10)
        await daemon.kernel.delivery.outbox.wait_idle()
        (row,) = await daemon.kernel.store.outbox.listing()
    assert row.last_error is not None
    assert "rate_limited" in row.last_error


async def test_rate_limits_cost_no_attempt(tmp_path: Path) -> None:
    """More 429s in a row than ``outbox_max_attempts`` still deliver: Telegram only asked us
    to wait, it did not say the send failed."""
    settings = make_settings(tmp_path, daemon={"outbox_max_attempts": 2})
    channel, agent = FakeChannel(caps=PLAIN_CAPS), FakeAgent()
    channel.fail_next.extend(RateLimited("429", retry_after=0.01) for _ in range(4))
    async with running(settings, [channel], agent) as daemon:
        await channel.inject(dm("hi", message_id="1"))
        await channel.wait_text("echo: hi", within=10)
        await daemon.kernel.delivery.outbox.wait_idle()
        (row,) = await daemon.kernel.store.outbox.listing()
        calls = await daemon.kernel.store.outbox.attempts(row.id)
    assert row.state is OutboxState.SENT
    assert row.attempts == 1  # the successful send; the four waits were free
    assert [call.outcome for call in calls][:4] == ["rate_limited"] * 4


async def test_rejected_rich_text_falls_back_to_plain(tmp_path: Path) -> None:
    channel, agent = FakeChannel(caps=PLAIN_CAPS), FakeAgent()
    channel.fail_next.append(InvalidRequest("can't parse entities"))
    async with running(make_settings(tmp_path), [channel], agent):
        await channel.inject(dm("hi", message_id="1"))
        sent = await channel.wait_text("echo: hi")
    assert isinstance(sent.delivery, OutboundText)
    assert sent.delivery.render is RenderMode.PLAIN


async def test_forbidden_is_not_retried(tmp_path: Path) -> None:
    channel, agent = FakeChannel(caps=PLAIN_CAPS), FakeAgent()
    channel.fail_next.append(Forbidden("bot was blocked by the user"))
    async with running(make_settings(tmp_path), [channel], agent) as daemon:
        await channel.inject(dm("hi", message_id="1"))
        await routed(daemon.kernel, 1)
        await daemon.kernel.conversations.lanes.wait_idle()
        await daemon.kernel.delivery.outbox.wait_idle()
        (row,) = await daemon.kernel.store.outbox.listing()
    assert row.state is OutboxState.DEAD
    assert row.attempts == 1
    assert channel.texts() == []


async def test_pending_rows_are_sent_after_a_restart(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    agent = FakeAgent()
    broken = FakeChannel(caps=PLAIN_CAPS)
    broken.fail_next.extend(TransientSendError("down") for _ in range(3))
    async with running(settings, [broken], agent) as daemon:
        await broken.inject(dm("hi", message_id="1"))
        await routed(daemon.kernel, 1)
        await daemon.kernel.conversations.lanes.wait_idle()
        (row,) = await daemon.kernel.store.outbox.listing()
        assert row.state is OutboxState.PENDING
    healthy = FakeChannel(caps=PLAIN_CAPS)
    async with running(settings, [healthy], agent) as daemon:
        await healthy.wait_text("echo: hi", within=10)
    assert len(agent.runs) == 1


async def test_agent_error_gives_a_clear_final_with_reference(tmp_path: Path) -> None:
    channel, agent = FakeChannel(), FakeAgent()
    async with running(make_settings(tmp_path), [channel], agent):
        await channel.inject(dm("fail: the model could not be reached", message_id="1"))
        final = await channel.wait_text("Sorry")
    assert "the model could not be reached" in final.text
    assert "(ref `" in final.text
    assert "Traceback" not in final.text


async def test_a_thread_that_cannot_be_created_gets_a_final_with_reference(
    tmp_path: Path,
) -> None:
    channel = FakeChannel()
    agent = FakeAgent(thread_failures=[AgentError("The agent server could not be reached.")])
    async with running(make_settings(tmp_path), [channel], agent) as daemon:
        await channel.inject(dm("hello", message_id="1"))
        final = await channel.wait_text("Sorry")
        (entry,) = await daemon.kernel.store.inbound.find("fake", "1")
        await channel.inject(dm("hello again", message_id="2"))
        await channel.wait_text("echo: hello again")  # the next message gets its thread
    assert "the agent server could not be reached" in final.text
    assert "(ref `" in final.text
    assert entry.status is InboundStatus.FAILED


async def test_timeout_gives_a_final_and_cancels_the_run(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, agent={"run_timeout_s": 0.2})
    channel, agent = FakeChannel(), FakeAgent()
    agent.hold("forever")
    async with running(settings, [channel], agent):
        await channel.inject(dm("forever", message_id="1"))
        final = await channel.wait_text("did not finish within 0.2 seconds")
    assert agent.cancelled == ["t1"]
    assert "ref" in final.text


async def test_long_answer_is_split_within_the_limit(tmp_path: Path) -> None:
    caps = ChannelCapabilities(text_limit=100)
    channel, agent = FakeChannel(caps=caps), FakeAgent()
    agent.reply_override = "\n\n".join(f"paragraph {i} " + "x" * 60 for i in range(4))
    async with running(make_settings(tmp_path), [channel], agent):
        await channel.inject(dm("long", message_id="1"))
        await channel.wait_text("paragraph 3")
    texts = channel.texts()
    assert len(texts) == 4
    assert all(len(text) <= 100 for text in texts)


async def test_very_long_answer_becomes_a_markdown_file(tmp_path: Path) -> None:
    caps = ChannelCapabilities(text_limit=100)
    channel, agent = FakeChannel(caps=caps), FakeAgent()
    agent.reply_override = "\n\n".join(f"paragraph {i} " + "y" * 80 for i in range(20))
    async with running(make_settings(tmp_path), [channel], agent):
        await channel.inject(dm("longer", message_id="1"))
        sent = await channel.wait_for(lambda s: isinstance(s.delivery, OutboundFile))
    assert isinstance(sent.delivery, OutboundFile)
    assert sent.delivery.name == "answer.md"
    assert Path(sent.delivery.path).read_text("utf-8") == agent.reply_override
    assert "attached as a Markdown file" in channel.texts()[0]


async def test_presented_files_follow_the_text_once(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    channel, agent = FakeChannel(caps=PLAIN_CAPS), FakeAgent()
    async with running(settings, [channel], agent):
        await channel.inject(dm("make a file", message_id="1"))
        await channel.wait_text("echo: make a file")
    workspace = ThreadWorkspace.for_thread(settings.state_dir, "t2")
    workspace.create()
    report = workspace.outputs / "report.png"
    report.write_bytes(b"\x89PNG fake")
    outside = tmp_path / "secret.txt"
    outside.write_text("nope")
    agent.files_to_present = [
        PresentedFile(path=report, name="report.png"),
        PresentedFile(path=report, name="report.png"),
        PresentedFile(path=outside, name="secret.txt"),
    ]
    channel = FakeChannel(caps=PLAIN_CAPS)
    async with running(settings, [channel], agent):
        await channel.inject(dm("/new", message_id="2"))
        await channel.wait_text("thread `t2`")
        await channel.inject(dm("again", message_id="3"))
        await channel.wait_for(lambda s: isinstance(s.delivery, OutboundFile))
        await channel.wait_text("secret.txt")
    kinds = [type(s.delivery).__name__ for s in channel.sent]
    assert kinds == ["OutboundText", "OutboundText", "OutboundText", "OutboundFile"]
    upload = channel.sent[-1].delivery
    assert isinstance(upload, OutboundFile)
    assert upload.is_image
    assert Path(upload.path).read_bytes() == b"\x89PNG fake"


async def test_a_rate_limited_chunk_holds_back_the_next_one(tmp_path: Path) -> None:
    caps = ChannelCapabilities(text_limit=100)
    channel, agent = FakeChannel(caps=caps), FakeAgent()
    agent.reply_override = "first " + "a" * 80 + "\n\nsecond " + "b" * 80
    channel.fail_next.append(RateLimited("429", retry_after=0.3))
    async with running(make_settings(tmp_path), [channel], agent):
        await channel.inject(dm("two chunks", message_id="1"))
        await channel.wait_text("second", within=10)
    texts = channel.texts()
    assert [text.split()[0] for text in texts] == ["first", "second"]


async def test_a_final_whose_placeholder_is_gone_is_sent_as_a_new_message(tmp_path: Path) -> None:
    """The user deleted the "thinking" message: the answer must still reach them."""
    channel, agent = FakeChannel(), ScriptedAgent()
    async with running(make_settings(tmp_path), [channel], agent) as daemon:
        await channel.inject(dm("hi", message_id="1"))
        agent.feed(TextDelta(text="Thinking about it"))
        placeholder = await channel.wait_for(lambda s: "Thinking about it" in s.text)
        channel.fail_next.append(MessageGone("message to edit not found"))
        agent.feed(FinalAnswer(text="The full answer."))
        final = await channel.wait_text("The full answer.")
        await daemon.kernel.delivery.outbox.wait_idle()
        rows = await daemon.kernel.store.outbox.listing()
    assert isinstance(final.delivery, OutboundText)  # not an edit of the vanished message
    assert final.message_id != placeholder.message_id
    assert all(
        row.state is OutboxState.SENT for row in rows if "/final/" in row.item.idempotency_key
    )


async def test_each_send_carries_its_rows_key_as_dedupe_key(tmp_path: Path) -> None:
    """Set at attempt time (design §8): a placeholder, a final whose placeholder is gone (sent
    anew under the edit's key) and a file; the rows do not store the key a second time."""
    channel, agent = FakeChannel(), ScriptedAgent()
    async with running(make_settings(tmp_path), [channel], agent) as daemon:
        await channel.inject(dm("hi", message_id="1"))
        agent.feed(TextDelta(text="Thinking about it"))
        placeholder = await channel.wait_for(lambda s: "Thinking about it" in s.text)
        channel.fail_next.append(MessageGone("message to edit not found"))
        agent.feed(FinalAnswer(text="x" * 30_000))  # long: a summary and the answer as a file
        upload = await channel.wait_for(lambda s: isinstance(s.delivery, OutboundFile))
        await daemon.kernel.delivery.outbox.wait_idle()
        rows = await daemon.kernel.store.outbox.listing()
    final = next(s for s in channel.sent if "attached as a Markdown file" in s.text)
    keys = {
        sent.delivery.dedupe_key
        for sent in (placeholder, final, upload)
        if isinstance(sent.delivery, OutboundText | OutboundFile)
    }
    sent_keys = {row.item.idempotency_key for row in rows if row.state is OutboxState.SENT}
    assert len(keys) == 3
    assert keys <= sent_keys
    assert any(key.endswith("/placeholder/0") for key in keys)
    stored = [r.item.delivery for r in rows]
    assert all(d.dedupe_key == "" for d in stored if isinstance(d, OutboundText | OutboundFile))
