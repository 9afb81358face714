"""The bounded buffer of ``group_policy: listen`` (design §20)."""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.config.settings import Settings
from bot.messages import (
    Attachment,
    AttachmentKind,
    ChatType,
    InboundMessage,
    Revision,
    RevisionKind,
    Sender,
)
from bot.pipeline.group_context import CONTEXT_HEADER, GroupContext, render_context, unheard_reason
from bot.ports import ChannelCapabilities
from tests.bot.harness import make_settings

START = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


def _settings(tmp_path: Path, policy: str = "listen", **listen: Any) -> Settings:
    return make_settings(
        tmp_path,
        access={"group_policy": policy},
        conversations={"listen": {"max_messages": 3, "max_age_minutes": 10, **listen}},
    )


def _message(  # noqa: PLR0913 - the fields the tests vary
    text: str,
    *,
    message_id: str = "m",
    chat_id: str = "g1",
    thread: str | None = None,
    name: str = "Alice",
    chat_type: ChatType = ChatType.GROUP,
    at: datetime = START,
    attachments: tuple[Attachment, ...] = (),
) -> InboundMessage:
    return InboundMessage(
        channel="fake", chat_id=chat_id, chat_type=chat_type, message_id=message_id,
        sender=Sender(id="u1", display_name=name), text=text, thread_root_id=thread,
        received_at=at, attachments=attachments,
    )  # fmt: skip


def _buffer(settings: Settings, clock: Clock, max_chats: int = 100) -> GroupContext:
    return GroupContext(lambda: settings, clock, max_chats=max_chats)


def test_the_newest_messages_are_given_once_and_older_ones_dropped(tmp_path: Path) -> None:
    buffer = _buffer(_settings(tmp_path), Clock())
    for number in range(5):
        assert buffer.hear(_message(f"say {number}", message_id=str(number)))
    given = buffer.take(_message("@bot what now?", message_id="q"))
    assert [entry.text for entry in given] == ["say 2", "say 3", "say 4"]
    assert buffer.take(_message("@bot again?", message_id="q2")) == ()
    assert buffer.held == 0


def test_messages_past_their_age_are_not_given(tmp_path: Path) -> None:
    clock = Clock()
    buffer = _buffer(_settings(tmp_path), clock)
    buffer.hear(_message("old news", message_id="1"))
    clock.now += timedelta(minutes=6)
    buffer.hear(_message("fresh", message_id="2"))
    clock.now += timedelta(minutes=5)  # the first is 11 minutes old, the second 5
    assert [entry.text for entry in buffer.take(_message("@bot ?"))] == ["fresh"]


def test_expired_chatter_of_other_chats_is_swept(tmp_path: Path) -> None:
    clock = Clock()
    buffer = _buffer(_settings(tmp_path), clock)
    buffer.hear(_message("in chat a", chat_id="a", message_id="1"))
    clock.now += timedelta(minutes=11)
    buffer.hear(_message("in chat b", chat_id="b", message_id="2"))
    assert buffer.held == 1
    assert buffer.take(_message("@bot", chat_id="a")) == ()


def test_the_least_recently_heard_chat_is_forgotten_beyond_capacity(tmp_path: Path) -> None:
    buffer = _buffer(_settings(tmp_path), Clock(), max_chats=2)
    for chat in ("a", "b", "a", "c"):
        buffer.hear(_message(f"in {chat}", chat_id=chat, message_id=chat))
    assert buffer.take(_message("@bot", chat_id="b")) == ()
    assert len(buffer.take(_message("@bot", chat_id="a"))) == 2
    assert len(buffer.take(_message("@bot", chat_id="c"))) == 1


def test_a_thread_takes_its_own_chatter_and_its_opening_message(tmp_path: Path) -> None:
    buffer = _buffer(_settings(tmp_path, max_messages=10), Clock())
    buffer.hear(_message("top level, opens a thread", message_id="root"))
    buffer.hear(_message("in the thread", message_id="r1", thread="root"))
    buffer.hear(_message("elsewhere", message_id="r2", thread="other"))
    buffer.hear(_message("top level again", message_id="t2"))
    in_thread = buffer.take(_message("@bot ?", message_id="q", thread="root"))
    assert [entry.text for entry in in_thread] == ["top level, opens a thread", "in the thread"]
    top = buffer.take(_message("@bot ?", message_id="q2"))
    assert [entry.text for entry in top] == ["top level again"]
    assert buffer.held == 1  # the other thread's message waits for that thread


def test_nothing_is_kept_unless_the_channel_listens(tmp_path: Path) -> None:
    buffer = _buffer(_settings(tmp_path, policy="mention"), Clock())
    assert not buffer.hear(_message("chatter"))
    assert buffer.held == 0
    listening = _buffer(_settings(tmp_path), Clock())
    assert not listening.hear(_message("a DM", chat_type=ChatType.DM))
    assert listening.held == 0


def test_long_texts_are_cut_and_files_named(tmp_path: Path) -> None:
    buffer = _buffer(_settings(tmp_path, max_message_chars=30), Clock())
    report = Attachment(kind=AttachmentKind.FILE, name="report.pdf", ref="r")
    buffer.hear(_message("abcd " * 50, message_id="1"))
    buffer.hear(_message("", message_id="2", attachments=(report,)))
    long, file = buffer.take(_message("@bot"))
    assert long.text == "abcd abcd abcd abcd abcd abcd…"
    assert file.text == "[attached: report.pdf]"


def test_render_shows_time_name_and_text_under_a_header(tmp_path: Path) -> None:
    buffer = _buffer(_settings(tmp_path), Clock())
    buffer.hear(_message("the build is red", at=START + timedelta(minutes=2)))
    buffer.hear(_message("since the merge", name="Bob", message_id="2"))
    block = render_context(buffer.take(_message("@bot why?")))
    assert block.splitlines() == [
        CONTEXT_HEADER,
        "[10:02] Alice: the build is red",
        "[10:00] Bob: since the merge",
    ]
    assert render_context(()) == ""


def test_render_dates_messages_that_span_days(tmp_path: Path) -> None:
    buffer = _buffer(_settings(tmp_path, max_age_minutes=48 * 60), Clock())
    buffer.hear(_message("late night", at=START - timedelta(hours=11)))
    buffer.hear(_message("morning", message_id="2"))
    lines = render_context(buffer.take(_message("@bot"))).splitlines()
    assert lines[1:] == [
        "[2026-12-02 23:00] Alice: late night",
        "[2026-12-03 10:00] Alice: morning",
    ]


def test_dropping_logs_counts_never_text(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="bot.pipeline.group_context")
    buffer = _buffer(_settings(tmp_path, max_messages=1), Clock())
    buffer.hear(_message("secret plans", message_id="1"))
    buffer.hear(_message("more secrets", message_id="2"))
    assert "count=1 reason=max_messages" in caplog.text
    assert "secret" not in caplog.text


def test_the_caveat_counts_only_where_the_channel_listens(tmp_path: Path) -> None:
    caps = ChannelCapabilities(text_limit=100, listen_caveat="only @-mentions arrive")
    assert unheard_reason(_settings(tmp_path), "fake", caps) == "only @-mentions arrive"
    assert unheard_reason(_settings(tmp_path, policy="mention"), "fake", caps) is None
    assert unheard_reason(_settings(tmp_path), "fake", ChannelCapabilities(text_limit=1)) is None


def test_an_edit_changes_and_a_recall_removes_a_heard_message(tmp_path: Path) -> None:
    buffer = _buffer(_settings(tmp_path), Clock())
    buffer.hear(_message("teh plan", message_id="1"))
    buffer.hear(_message("oops, private", message_id="2"))
    edit = Revision(kind=RevisionKind.EDITED, message_id="1")
    recall = Revision(kind=RevisionKind.RECALLED, message_id="2")
    buffer.revise(replace(_message("the plan", message_id="e1"), revision=edit))
    buffer.revise(replace(_message("", message_id="e2"), revision=recall))
    assert [entry.text for entry in buffer.take(_message("@bot"))] == ["the plan"]
    buffer.hear(_message("alone", message_id="3"))
    gone = Revision(kind=RevisionKind.RECALLED, message_id="3")
    buffer.revise(replace(_message("", message_id="e3"), revision=gone))
    assert buffer.held == 0
