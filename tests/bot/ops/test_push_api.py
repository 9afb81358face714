"""The HTTP push API on the real daemon (fake channel and agent): design §19."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp

from bot.errors import Forbidden
from bot.messages import ChatType, OutboundFile, OutboundText
from tests.bot.harness import http_get, routed, running
from tests.bot.ops.push_support import TOKEN, api_url, delivery, post, push_settings
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import FakeChannel, dm, group
from tests.fakes.common.waiting import eventually

OTHER = TOKEN[::-1]
TEXT = {"channel": "fake", "chat": "dm-alice", "chat_type": "dm", "text": "**Deploy** done"}


async def test_a_push_arrives_once_and_its_repeat_adds_nothing(tmp_path: Path) -> None:
    channel = FakeChannel()
    async with running(push_settings(tmp_path), [channel], FakeAgent()) as run:
        status, first, _ = await post(run.daemon, TEXT, key="deploy-42")
        assert status == 202
        assert first["status"] == "queued"
        assert first["repeated"] is False
        sent = await channel.wait_text("**Deploy** done")
        assert isinstance(sent.delivery, OutboundText)
        assert sent.delivery.reply_to is None
        assert sent.delivery.destination.chat_type is ChatType.DM
        status, again, _ = await post(run.daemon, TEXT, key="deploy-42")
        assert status == 202
        assert again["delivery_id"] == first["delivery_id"]
        assert again["repeated"] is True
        await run.kernel.delivery.outbox.wait_idle()

        async def reported_sent() -> bool:
            _, report = await delivery(run.daemon, first["delivery_id"])
            return bool(report["status"] == "sent")

        await eventually(reported_sent)
        _, report = await delivery(run.daemon, first["delivery_id"])
        audit = await run.kernel.store.audit.recent()
        _, metrics = await http_get(run.daemon, "/metrics")
    assert channel.texts() == ["**Deploy** done"]
    assert report["kind"] == "text"
    assert report["run"] is None
    assert [m["state"] for m in report["messages"]] == ["sent"]
    assert [(e.actor, e.action) for e in audit if e.action.startswith("push")] == [
        ("api", "push text")
    ]
    assert 'switchboard_pushes_total{kind="text",outcome="accepted"} 1.0' in metrics
    assert 'switchboard_pushes_total{kind="text",outcome="repeated"} 1.0' in metrics


async def test_a_repeat_after_the_chat_became_known_is_the_same_delivery(tmp_path: Path) -> None:
    channel = FakeChannel()
    async with running(push_settings(tmp_path), [channel], FakeAgent()) as run:
        status, first, _ = await post(run.daemon, TEXT, key="before-hello")
        await channel.wait_text("**Deploy** done")
        # Now the chat writes, from an account of its own: the lookup finds that account.
        await channel.inject(dm("hello", message_id="m1", account_id="acct-7"))
        await routed(run.kernel, 1)
        again = await post(run.daemon, TEXT, key="before-hello")
        await run.kernel.delivery.outbox.wait_idle()
    assert status == 202, first
    assert again[0] == 202, again
    assert (again[1]["delivery_id"], again[1]["repeated"]) == (first["delivery_id"], True)
    assert channel.texts().count("**Deploy** done") == 1


async def test_metrics_count_push_deliveries_by_kind_and_outcome(tmp_path: Path) -> None:
    channel = FakeChannel()
    async with running(push_settings(tmp_path), [channel], FakeAgent()) as run:
        await post(run.daemon, TEXT)
        await channel.wait_text("**Deploy** done")
        channel.fail_next.append(Forbidden("bot was blocked by the user"))
        _, refused, _ = await post(run.daemon, {**TEXT, "chat": "dm-bob", "text": "blocked"})

        async def reported_dead() -> bool:
            _, report = await delivery(run.daemon, refused["delivery_id"])
            return bool(report["status"] == "dead")

        await eventually(reported_dead)
        _, metrics = await http_get(run.daemon, "/metrics")
    assert 'switchboard_push_deliveries_total{kind="text",outcome="sent"} 1.0' in metrics
    assert 'switchboard_push_deliveries_total{kind="text",outcome="dead"} 1.0' in metrics


async def test_the_same_key_for_another_request_is_a_conflict(tmp_path: Path) -> None:
    async with running(push_settings(tmp_path), [FakeChannel()], FakeAgent()) as run:
        assert (await post(run.daemon, TEXT, key="k"))[0] == 202
        status, body, _ = await post(run.daemon, {**TEXT, "text": "other"}, key="k")
    assert status == 409
    assert body["field"] == "Idempotency-Key"


async def test_no_token_or_a_wrong_one_is_refused(tmp_path: Path) -> None:
    channel = FakeChannel()
    async with running(push_settings(tmp_path), [channel], FakeAgent()) as run:
        missing = await post(run.daemon, TEXT, token=None)
        wrong = await post(run.daemon, TEXT, token=OTHER)
        status, _ = await delivery(run.daemon, "push-0", token=OTHER)
    for answer_status, _body, headers in (missing, wrong):
        assert answer_status == 401
        assert headers["WWW-Authenticate"].startswith("Bearer")
    assert status == 401
    assert channel.sent == []


async def test_a_bad_body_is_refused_naming_the_field(tmp_path: Path) -> None:
    async with running(push_settings(tmp_path), [FakeChannel()], FakeAgent()) as run:
        no_chat = await post(run.daemon, {"channel": "fake", "text": "hi"})
        relative = await post(
            run.daemon, {"channel": "fake", "chat": "c", "file": {"path": "notes.txt"}}
        )
        both = await post(run.daemon, {**TEXT, "run_agent": {"prompt": "hello"}})
        bad_type = await post(run.daemon, {**TEXT, "chat_type": "channel"})
        not_json = await post(run.daemon, b"{nope")
        bad_key = await post(run.daemon, TEXT, key="x" * 500)
    assert [p["field"] for p in no_chat[1]["fields"]] == ["chat"]
    assert [p["field"] for p in relative[1]["fields"]] == ["file.path"]
    assert "exactly one of text" in both[1]["fields"][0]["problem"]
    assert [p["field"] for p in bad_type[1]["fields"]] == ["chat_type"]
    assert not_json[0] == 400
    assert bad_key[0] == 400
    assert bad_key[1]["field"] == "Idempotency-Key"
    assert {answer[0] for answer in (no_chat, relative, both, bad_type)} == {400}


async def test_an_oversized_body_is_refused(tmp_path: Path) -> None:
    settings = push_settings(
        tmp_path, http={"push_api": {"enabled": True, "token": TOKEN, "max_body_bytes": 2048}}
    )
    channel = FakeChannel()
    async with running(settings, [channel], FakeAgent()) as run:
        status, body, _ = await post(run.daemon, {**TEXT, "text": "x" * 4096})

        # A chunked body (no Content-Length) is cut off while it is read.
        async def chunks() -> AsyncIterator[bytes]:
            yield b'{"channel": "fake", "chat": "dm-alice", "text": "'
            for _ in range(8):
                yield b"y" * 1024
            yield b'"}'

        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with (
            aiohttp.ClientSession() as session,
            session.post(
                api_url(run.daemon, "/api/v1/messages"), data=chunks(), headers=headers
            ) as response,
        ):
            chunked = response.status
    assert status == 413
    assert body["field"] == "body"
    assert chunked == 413
    assert channel.sent == []


async def test_unknown_channels_and_chats_are_named(tmp_path: Path) -> None:
    channel = FakeChannel()
    async with running(push_settings(tmp_path), [channel], FakeAgent()) as run:
        no_channel = await post(run.daemon, {**TEXT, "channel": "irc"})
        unknown = await post(run.daemon, {"channel": "fake", "chat": "nobody", "text": "hi"})
        await channel.inject(group("hello @fakebot", message_id="m1", mentions_bot=True))
        await routed(run.kernel, 1)
        known = await post(run.daemon, {"channel": "fake", "chat": "g1", "text": "to the group"})
        sent = await channel.wait_text("to the group")
    assert no_channel[0] == 404
    assert no_channel[1]["field"] == "channel"
    assert unknown[0] == 404
    assert unknown[1]["field"] == "chat"
    assert "chat_type" in unknown[1]["error"]
    assert known[0] == 202
    assert sent.delivery.destination.chat_type is ChatType.GROUP  # as the journal knew it


async def test_a_file_sent_along_arrives(tmp_path: Path) -> None:
    channel = FakeChannel()
    content = base64.b64encode(b"a,b\n1,2\n").decode()
    body = {
        "channel": "fake", "chat": "dm-alice", "chat_type": "dm",
        "file": {"name": "../report.csv", "content_base64": content, "caption": "today"},
    }  # fmt: skip
    async with running(push_settings(tmp_path), [channel], FakeAgent()) as run:
        status, answer, _ = await post(run.daemon, body)
        sent = await channel.wait_for(lambda s: isinstance(s.delivery, OutboundFile))
    assert status == 202
    assert answer["kind"] == "file"
    assert isinstance(sent.delivery, OutboundFile)
    assert sent.delivery.name == "report.csv"
    assert sent.delivery.caption == "today"
    assert Path(sent.delivery.path).read_bytes() == b"a,b\n1,2\n"
    assert Path(sent.delivery.path).is_relative_to(tmp_path / "pushes")


async def test_a_file_named_by_its_path_arrives_and_a_missing_one_is_refused(
    tmp_path: Path,
) -> None:
    report = tmp_path / "nightly.txt"
    report.write_text("all green\n")
    where = {"channel": "fake", "chat": "dm-alice", "chat_type": "dm"}
    channel = FakeChannel()
    push_api = {"enabled": True, "token": TOKEN, "file_roots": [str(tmp_path)]}
    settings = push_settings(tmp_path / "state", http={"push_api": push_api})
    async with running(settings, [channel], FakeAgent()) as run:
        status, answer, _ = await post(run.daemon, {**where, "file": {"path": str(report)}})
        sent = await channel.wait_for(lambda s: isinstance(s.delivery, OutboundFile))
        missing = await post(run.daemon, {**where, "file": {"path": str(tmp_path / "gone.txt")}})
    assert (status, answer["kind"]) == (202, "file"), answer
    assert isinstance(sent.delivery, OutboundFile)
    assert sent.delivery.name == "nightly.txt"
    assert Path(sent.delivery.path).read_text() == "all green\n"
    assert missing[0] == 400
    assert missing[1]["field"] == "file.path"
    assert "gone.txt" not in str(missing[1]), missing  # one answer for missing and forbidden


async def test_run_agent_answers_in_the_conversations_thread(tmp_path: Path) -> None:
    channel, agent = FakeChannel(), FakeAgent()
    async with running(push_settings(tmp_path), [channel], agent) as run:
        await channel.inject(dm("hi", message_id="m1"))
        await channel.wait_text("echo: hi")
        body = {"channel": "fake", "chat": "dm-alice", "run_agent": {"prompt": "summarise"}}
        status, answer, _ = await post(run.daemon, body, key="daily")
        sent = await channel.wait_text("echo: summarise")
        runs = await agent.wait_runs(2)
        await run.kernel.conversations.lanes.wait_idle()
        await run.kernel.delivery.outbox.wait_idle()
        again = await post(run.daemon, body, key="daily")
        _, report = await delivery(run.daemon, answer["delivery_id"])
    assert status == 202
    assert answer["kind"] == "run_agent"
    assert runs[1].thread_id == runs[0].thread_id  # the conversation's own thread
    assert isinstance(sent.delivery, OutboundText)
    assert sent.delivery.reply_to is None
    assert again[1]["repeated"] is True
    assert len(agent.runs) == 2
    assert report["status"] == "sent"
    assert report["run"]["status"] == "handled"


async def test_the_api_is_off_unless_enabled(tmp_path: Path) -> None:
    settings = push_settings(tmp_path, http={"push_api": {"enabled": False}})
    async with running(settings, [FakeChannel()], FakeAgent()) as run:
        status, _ = await http_get(run.daemon, "/api/v1/deliveries/push-1")
    assert status in (404, 405)
