"""The Slack adapter with real slack-bolt, in Socket Mode and HTTP mode, through the real daemon.

Every test runs once per mode: the same acceptance points must hold whether events arrive
over the Socket Mode websocket or as signed HTTP POSTs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.messages import Reaction
from bot.ports import FinalAnswer, PresentedFile, TextDelta
from channels.slack.outbound import REACTIONS
from tests.channels.slack_support import (
    BOT,
    markdown_of,
    mention,
    slack_daemon,
    slack_settings,
    texts,
    wait_text,
)
from tests.fakes.agent import FakeAgent
from tests.fakes.scripted_agent import ScriptedAgent
from tests.fakes.slack_api import FakeSlack

CHANNEL = "C0001"


@pytest.fixture(params=["socket", "http"])
def mode(request: pytest.FixtureRequest) -> str:
    value: str = request.param
    return value


def reaction_names(fake: FakeSlack, channel: str, ts: str) -> list[str]:
    message = fake.message(channel, ts) or {}
    return [r["name"] for r in message.get("reactions") or ()]


async def test_dm_conversation_streams_updates(tmp_path: Path, mode: str) -> None:
    with FakeSlack() as fake:
        agent = ScriptedAgent()
        settings = slack_settings(tmp_path, fake, mode=mode)
        async with slack_daemon(settings, fake, agent) as run:
            ts = fake.push_message("tell me a story")
            agent.feed(TextDelta(text="Once"))
            placeholder = await fake.await_call("chat.postMessage")
            assert placeholder.params["text"].startswith("Once")
            assert "thread_ts" not in placeholder.params  # a DM is answered at top level
            assert REACTIONS[Reaction.WORKING] in reaction_names(fake, "D0001", ts)
            agent.feed(TextDelta(text=" upon a time"))
            await fake.await_call("chat.update", lambda c: "upon a time" in c.params["text"])
            agent.feed(FinalAnswer(text="Once upon a **time**."))
            await fake.await_call("chat.update", lambda c: bool(c.params.get("blocks")))
            await run.settle()
        [message] = fake.channel_messages("D0001")
        assert markdown_of(message) == "Once upon a **time**."
        assert reaction_names(fake, "D0001", ts) == [REACTIONS[Reaction.DONE]]
        assert agent.turns[0].text == "tell me a story"
        assert agent.turns[0].sender.display_name  # resolved with users.info


async def test_channel_mention_is_answered_in_a_thread_once(tmp_path: Path, mode: str) -> None:
    with FakeSlack() as fake:
        agent = FakeAgent()
        settings = slack_settings(tmp_path, fake, mode=mode)
        async with slack_daemon(settings, fake, agent) as run:
            ts = fake.push_message(
                mention("what is up?"), channel=CHANNEL, channel_type="channel",
                also_app_mention=True,
            )  # fmt: skip
            await wait_text(fake, CHANNEL, "echo: what is up?")
            await fake.await_until(lambda: len(fake.acks()) >= 2)
            await run.settle()
        assert len(agent.runs) == 1  # app_mention + message for one message: one run
        [answer] = fake.channel_messages(CHANNEL)
        assert answer["thread_ts"] == ts


async def test_thread_follow_up_continues_without_a_mention(tmp_path: Path, mode: str) -> None:
    with FakeSlack() as fake:
        agent = FakeAgent()
        settings = slack_settings(tmp_path, fake, mode=mode)
        async with slack_daemon(settings, fake, agent) as run:
            root = fake.push_message(mention("first"), channel=CHANNEL, channel_type="channel")
            await wait_text(fake, CHANNEL, "echo: first")
            fake.push_message("second", channel=CHANNEL, channel_type="channel", thread_ts=root)
            await wait_text(fake, CHANNEL, "echo: second")
            fake.push_message("unrelated chatter", channel=CHANNEL, channel_type="channel")
            await fake.await_until(lambda: len(fake.acks()) >= 3)
            await run.settle()
        assert [r.turn.text for r in agent.runs] == ["first", "second"]
        assert agent.runs[0].thread_id == agent.runs[1].thread_id
        assert {m["thread_ts"] for m in fake.channel_messages(CHANNEL)} == {root}


async def test_redelivery_produces_no_second_run(tmp_path: Path, mode: str) -> None:
    with FakeSlack() as fake:
        agent = FakeAgent()
        settings = slack_settings(tmp_path, fake, mode=mode)
        async with slack_daemon(settings, fake, agent) as run:
            fake.push_message("only once", event_id="Ev0001")
            await wait_text(fake, "D0001", "echo: only once")
            fake.redeliver("Ev0001")
            await fake.await_until(lambda: len(fake.acks()) >= 2)
            await run.settle()
        assert [d.retry_attempt for d in fake.deliveries()] == [0, 1]
        assert len(agent.runs) == 1
        assert texts(fake, "D0001") == ["echo: only once"]


async def test_lost_acks_are_redelivered_and_run_once(tmp_path: Path, mode: str) -> None:
    with FakeSlack() as fake:
        fake.ack_timeout_s = 0.2
        agent = FakeAgent()
        settings = slack_settings(tmp_path, fake, mode=mode)
        async with slack_daemon(settings, fake, agent) as run:
            fake.withhold_acks(on=True)
            fake.push_message("acks get lost")
            await fake.await_until(lambda: any(d.retry_attempt >= 1 for d in fake.deliveries()))
            fake.withhold_acks(on=False)
            await wait_text(fake, "D0001", "echo: acks get lost")
            await run.settle()
        assert len(agent.runs) == 1


async def test_clarification_by_button_marks_the_choice(tmp_path: Path, mode: str) -> None:
    with FakeSlack() as fake:
        agent = FakeAgent()
        settings = slack_settings(tmp_path, fake, mode=mode)
        async with slack_daemon(settings, fake, agent) as run:
            root = fake.push_message(
                mention("ask: Which colour? | red | blue"), channel=CHANNEL,
                channel_type="channel",
            )  # fmt: skip
            await wait_text(fake, CHANNEL, "Which colour?")
            [question] = fake.channel_messages(CHANNEL)
            assert question["thread_ts"] == root
            [actions] = [b for b in question["blocks"] if b["type"] == "actions"]
            blue = actions["elements"][1]
            fake.click_button(
                channel=CHANNEL, message_ts=question["ts"], action_id=blue["action_id"],
                value=blue["value"],
            )  # fmt: skip
            await wait_text(fake, CHANNEL, "answer: blue")
            await run.settle()
        shown = fake.message(CHANNEL, question["ts"]) or {}
        kinds = [b["type"] for b in shown["blocks"]]
        assert "actions" not in kinds
        assert "Chosen: *blue*" in str(shown["blocks"])
        assert agent.runs[1].turn.resume_answer == "blue"


async def test_clarification_by_typed_reply_in_the_thread(tmp_path: Path, mode: str) -> None:
    with FakeSlack() as fake:
        agent = FakeAgent()
        settings = slack_settings(tmp_path, fake, mode=mode)
        async with slack_daemon(settings, fake, agent) as run:
            root = fake.push_message(
                mention("ask: Which size? | S | M"), channel=CHANNEL, channel_type="channel"
            )
            await wait_text(fake, CHANNEL, "Which size?")
            fake.push_message("2", channel=CHANNEL, channel_type="channel", thread_ts=root)
            await wait_text(fake, CHANNEL, "answer: M")
            await run.settle()
        assert agent.runs[1].turn.resume_answer == "M"


async def test_file_in_and_file_out(tmp_path: Path, mode: str) -> None:
    with FakeSlack() as fake:
        agent = FakeAgent()
        report = tmp_path / "threads" / "t1" / "outputs" / "report.txt"
        report.parent.mkdir(parents=True)
        report.write_text("the report")
        agent.files_to_present.append(PresentedFile(path=report, name="report.txt"))
        shared = fake.add_file("F0INPUT", b"col1,col2\n1,2\n", name="data.csv", mimetype="text/csv")
        settings = slack_settings(tmp_path, fake, mode=mode)
        async with slack_daemon(settings, fake, agent) as run:
            root = fake.push_message(
                mention("summarise this"), channel=CHANNEL, channel_type="channel",
                files=[shared],
            )  # fmt: skip
            await fake.await_call("files.completeUploadExternal")
            await run.settle()
        [upload] = agent.runs[0].turn.uploads
        assert upload.path.read_bytes() == b"col1,col2\n1,2\n"
        assert upload.name == "data.csv"
        download = fake.calls("files.download")[0]
        assert download.token == fake.ids.bot_token
        assert list(fake.uploads().values()) == [b"the report"]
        complete = fake.calls("files.completeUploadExternal")[0]
        assert (complete.params["channel_id"], complete.params["thread_ts"]) == (CHANNEL, root)


async def test_long_markdown_answer_is_split_within_limits(tmp_path: Path, mode: str) -> None:
    paragraph = "A sentence about Slack limits, repeated for length. " * 20
    long_answer = "\n\n".join(f"## Part {i}\n\n{paragraph}" for i in range(28))
    assert 25_000 < len(long_answer) < 36_000
    with FakeSlack() as fake:
        agent = FakeAgent(reply_override=long_answer)
        settings = slack_settings(tmp_path, fake, mode=mode)
        async with slack_daemon(settings, fake, agent) as run:
            fake.push_message("write a lot")
            await fake.await_until(lambda: len(fake.channel_messages("D0001")) >= 3)
            await run.settle()
        failed = [c for c in fake.calls() if not c.ok]
        assert failed == []
        parts = [markdown_of(m) for m in fake.channel_messages("D0001")]
        assert len(parts) == 3
        assert all(len(part) <= 12_000 for part in parts)
        assert "## Part 0" in parts[0]
        assert "## Part 27" in parts[-1]


@pytest.mark.parametrize("as_status", [True, False], ids=["http-429", "ok-false-ratelimited"])
async def test_rate_limit_is_honoured(tmp_path: Path, mode: str, *, as_status: bool) -> None:
    with FakeSlack() as fake:
        agent = FakeAgent()
        if as_status:
            fake.fail_next("chat.postMessage", status=429, retry_after=1)
        else:
            fake.fail_next("chat.postMessage", error="ratelimited")
        settings = slack_settings(tmp_path, fake, mode=mode)
        async with slack_daemon(settings, fake, agent) as run:
            fake.push_message("slow down")
            await wait_text(fake, "D0001", "echo: slow down", within=8)
            await run.settle()
        refused, sent = fake.calls("chat.postMessage")
        assert not refused.ok
        assert sent.ok
        assert sent.at - refused.at >= 0.95  # Retry-After (or the default 1 s) was waited out


async def test_own_bot_edit_and_system_messages_start_nothing(tmp_path: Path, mode: str) -> None:
    with FakeSlack() as fake:
        agent = FakeAgent()
        settings = slack_settings(tmp_path, fake, mode=mode)
        async with slack_daemon(settings, fake, agent) as run:
            dm = {"type": "message", "channel": "D0001", "channel_type": "im"}
            fake.push_event({**dm, "user": BOT, "text": "my own words", "ts": "1.000001"})
            fake.push_event({**dm, "subtype": "bot_message", "bot_id": "B0OTHER", "text": "beep",
                             "ts": "1.000002"})  # fmt: skip
            fake.push_event({**dm, "subtype": "message_changed", "ts": "1.000003",
                             "message": {"user": "UHUMAN01", "text": "edited"}})  # fmt: skip
            fake.push_event({**dm, "subtype": "message_deleted", "ts": "1.000004"})
            fake.push_message("a real question")
            await wait_text(fake, "D0001", "echo: a real question")
            await fake.await_until(lambda: len(fake.acks()) >= 5)
            await run.settle()
        assert [r.turn.text for r in agent.runs] == ["a real question"]


async def test_a_thread_in_a_dm_is_its_own_conversation(tmp_path: Path, mode: str) -> None:
    with FakeSlack() as fake:
        agent = FakeAgent()
        settings = slack_settings(tmp_path, fake, mode=mode)
        async with slack_daemon(settings, fake, agent) as run:
            first = fake.push_message("one")
            await wait_text(fake, "D0001", "echo: one")
            fake.push_message("two")
            await wait_text(fake, "D0001", "echo: two")
            fake.push_message("three", thread_ts=first)
            await wait_text(fake, "D0001", "echo: three")
            await run.settle()
        threads = [r.thread_id for r in agent.runs]
        assert threads[0] == threads[1] != threads[2]
        replies = fake.channel_messages("D0001")
        assert [m.get("thread_ts") for m in replies] == [None, None, first]
