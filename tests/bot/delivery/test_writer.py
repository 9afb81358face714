"""The one reply path: a context made from what is answered, and a writer that plans and
records text, notices, answers and reactions under the context's idempotency keys."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bot.delivery.replies import ReplyContext
from bot.delivery.writer import ReplyWriter
from bot.messages import (
    Destination,
    OutboundFile,
    OutboundKind,
    OutboundText,
    Reaction,
    ReactionMark,
    TextEdit,
)
from bot.pipeline.bus import Accepted
from bot.ports import ChannelCapabilities, PresentedFile
from bot.records import OutboxItem
from bot.workspace import ThreadWorkspace
from tests.fakes.channel import group
from tests.store.support import key

CAPS = ChannelCapabilities(text_limit=20, edits=True, reactions=frozenset({Reaction.DONE}))
KEY = key("g1", channel="fake", topic_id="t9")
ANSWERED = Accepted(entry_id=7, message=group("hi", message_id="m3"), correlation_id="corr")


class Recorded:
    def __init__(self) -> None:
        self.items: list[OutboxItem] = []
        self.finishes: list[int] = []

    async def __call__(
        self, items: Sequence[OutboxItem], *, finishes: Sequence[int] = ()
    ) -> list[int]:
        self.items += items
        self.finishes += finishes
        return list(range(len(items)))


def test_a_reply_answers_its_message_in_the_conversations_chat() -> None:
    ctx = ReplyContext.answering(KEY, ANSWERED, thread_id="th", tag="notice")
    assert ctx.destination == Destination.of(KEY, ANSWERED.message.chat_type)
    assert (ctx.reply_to, ctx.correlation_id, ctx.thread_id) == ("m3", "corr", "th")
    mark = ReactionMark(destination=ctx.destination, message_id="m3", reaction=Reaction.DONE)
    assert ctx.item(0, mark).idempotency_key == "corr/notice/0"


async def test_text_replaces_the_placeholder_then_continues_in_new_messages() -> None:
    recorded = Recorded()
    replies = ReplyWriter(ReplyContext.answering(KEY, ANSWERED), CAPS, recorded)
    await replies.text("first part\n\nsecond part", placeholder_id="p1")
    first, second = (item.delivery for item in recorded.items)
    assert isinstance(first, TextEdit)
    assert first.message_id == "p1"
    assert isinstance(second, OutboundText)
    assert second.reply_to is None
    assert [item.idempotency_key for item in recorded.items] == ["corr/final/0", "corr/final/1"]
    await replies.tagged("stop").text("a b c d e f g h i j k l m n o p", max_messages=1)
    assert recorded.items[-1].idempotency_key == "corr/stop/0"
    assert len(recorded.items) == 3


async def test_a_notice_and_a_reaction_the_platform_shows() -> None:
    recorded = Recorded()
    replies = ReplyWriter(ReplyContext.answering(KEY, ANSWERED), CAPS, recorded)
    await replies.notice("queued")
    await replies.react(Reaction.WORKING)  # not shown on this platform: nothing recorded
    await replies.tagged("react-done").react(Reaction.DONE)
    notice, mark = (item.delivery for item in recorded.items)
    assert isinstance(notice, OutboundText)
    assert notice.kind is OutboundKind.NOTICE
    assert isinstance(mark, ReactionMark)
    assert mark.message_id == "m3"


async def test_an_answer_is_text_then_notes_then_files_and_finishes_its_messages(
    tmp_path: Path,
) -> None:
    workspace = ThreadWorkspace.for_thread(tmp_path, "th")
    workspace.create()
    (workspace.outputs / "chart.png").write_bytes(b"png")
    files = [
        PresentedFile(path=workspace.outputs / "chart.png", name="chart.png"),
        PresentedFile(path=tmp_path / "elsewhere.txt", name="elsewhere.txt"),
    ]
    recorded = Recorded()
    replies = ReplyWriter(ReplyContext.answering(KEY, ANSWERED), CAPS, recorded)
    await replies.answer("done", files, workspace, placeholder_id=None, finishes=[7])
    kinds = [type(item.delivery) for item in recorded.items]
    assert kinds == [OutboundText, OutboundText, OutboundFile]
    assert recorded.finishes == [7]
