"""What the Feishu adapter sends through the real daemon: clarification cards answered by a
button press, files in and out, reactions, the rendering ladder, rate limits and tokens."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.messages import Reaction
from bot.ports import PresentedFile
from channels.feishu.outbound import REACTIONS
from tests.channels.feishu_support import (
    DM,
    GROUP,
    at_bot,
    feishu_daemon,
    feishu_settings,
    shown_text,
    texts,
    wait_text,
)
from tests.fakes.agent import FakeAgent
from tests.fakes.feishu import TINY_PNG
from tests.fakes.feishu_api import FakeFeishu


@pytest.fixture(params=["websocket", "webhook"])
def mode(request: pytest.FixtureRequest) -> str:
    value: str = request.param
    return value


async def test_clarification_buttons_are_answered_by_a_card_press(
    tmp_path: Path, mode: str
) -> None:
    with FakeFeishu() as fake:
        agent = FakeAgent()
        settings = feishu_settings(tmp_path, fake, mode=mode)
        async with feishu_daemon(settings, fake, agent) as run:
            root = await run.send(**at_bot(fake, "ask: Which colour? | red | blue"))
            await wait_text(fake, GROUP, "Which colour?")
            [question] = fake.sent_messages(GROUP)
            assert question.root_id == root
            buttons = [e for e in question.content["body"]["elements"] if e["tag"] == "button"]
            assert [b["text"]["content"] for b in buttons] == ["red", "blue"]
            value = buttons[1]["behaviors"][0]["value"]
            await run.press(message_id=question.message_id, chat_id=GROUP, value=value)
            await wait_text(fake, GROUP, "answer: blue")
            await fake.await_call("im.message.patch")
            await run.settle()
        assert agent.runs[1].turn.resume_answer == "blue"
        shown = fake.message(question.message_id)
        assert shown is not None
        assert "Chosen: **blue**" in shown_text(fake, shown)
        pressed = [e for e in shown.content["body"]["elements"] if e["tag"] == "button"]
        assert len(pressed) == 2
        assert all(b["disabled"] for b in pressed)


async def test_files_in_are_downloaded_and_files_out_uploaded(tmp_path: Path, mode: str) -> None:
    with FakeFeishu() as fake:
        agent = FakeAgent()
        outputs = tmp_path / "threads" / "t1" / "outputs"
        outputs.mkdir(parents=True)
        (outputs / "chart.png").write_bytes(TINY_PNG)
        (outputs / "report.pdf").write_bytes(b"%PDF-1.4 report")
        agent.files_to_present.extend([
            PresentedFile(path=outputs / "chart.png", name="chart.png"),
            PresentedFile(path=outputs / "report.pdf", name="report.pdf"),
        ])  # fmt: skip
        settings = feishu_settings(tmp_path, fake, mode=mode)
        async with feishu_daemon(settings, fake, agent) as run:
            payload = fake.message_payload(
                chat_id=DM, message_type="file", content=fake.file_content("file_in1", "data.csv")
            )
            message_id = payload["event"]["message"]["message_id"]
            fake.add_resource(message_id, "file_in1", b"a,b\n1,2\n", kind="file",
                              file_name="data.csv")  # fmt: skip
            if run.events_url:
                await run.post(payload)
            else:
                fake.push_event(payload)
            await fake.await_until(lambda: len(fake.sent_messages(DM)) >= 3)
            await run.settle()
        [upload] = agent.runs[0].turn.uploads
        assert (upload.name, upload.path.read_bytes()) == ("data.csv", b"a,b\n1,2\n")
        download = fake.calls("im.message_resource.get")[0]
        assert download.query["type"] == "file"
        kinds = [m.msg_type for m in fake.sent_messages(DM)]
        assert kinds == ["interactive", "image", "file"]
        uploads = {u.file_name: u for u in fake.uploads().values()}
        assert uploads["chart.png"].data == TINY_PNG
        assert (uploads["report.pdf"].file_type, uploads["report.pdf"].data) == (
            "pdf", b"%PDF-1.4 report"
        )  # fmt: skip


async def test_an_image_in_is_downloaded(tmp_path: Path) -> None:
    with FakeFeishu() as fake:
        agent = FakeAgent()
        settings = feishu_settings(tmp_path, fake)
        async with feishu_daemon(settings, fake, agent) as run:
            payload = fake.message_payload(
                chat_id=DM, message_type="image", content=fake.image_content("img_in1")
            )
            message_id = payload["event"]["message"]["message_id"]
            fake.add_resource(message_id, "img_in1", TINY_PNG, kind="image")
            fake.push_event(payload)
            await wait_text(fake, DM, "echo")
            await run.settle()
        [upload] = agent.runs[0].turn.uploads
        assert upload.path.read_bytes() == TINY_PNG
        assert fake.calls("im.message_resource.get")[0].query["type"] == "image"


async def test_a_queued_message_gets_a_reaction(tmp_path: Path) -> None:
    with FakeFeishu() as fake:
        agent = FakeAgent()
        release = agent.hold("slow")
        settings = feishu_settings(tmp_path, fake)
        async with feishu_daemon(settings, fake, agent) as run:
            fake.push_message("slow one", chat_id=DM)
            await agent.wait_runs(1)
            queued = fake.push_message("next one", chat_id=DM)
            await fake.await_until(
                lambda: (
                    REACTIONS[Reaction.QUEUED] in [r["emoji_type"] for r in fake.reactions(queued)]
                )
            )
            release.set()
            await wait_text(fake, DM, "echo: next one")
            await run.settle()
        assert [r["emoji_type"] for r in fake.reactions(queued)] == [REACTIONS[Reaction.DONE]]


async def test_a_refused_card_falls_back_to_post(tmp_path: Path) -> None:
    with FakeFeishu() as fake:
        fake.fail_invalid_card("im.message.reply")
        settings = feishu_settings(tmp_path, fake)
        async with feishu_daemon(settings, fake, FakeAgent()) as run:
            fake.push_message("hi", chat_id=DM)
            await wait_text(fake, DM, "echo: hi")
            await run.settle()
        [answer] = fake.sent_messages(DM)
        assert answer.msg_type == "post"
        assert [c.code for c in fake.calls("im.message.reply")] == [230099, 0]


async def test_rate_limit_waits_the_reset_header(tmp_path: Path) -> None:
    with FakeFeishu() as fake:
        fake.rate_limit("im.message.reply", reset_s=1)
        settings = feishu_settings(tmp_path, fake)
        async with feishu_daemon(settings, fake, FakeAgent()) as run:
            fake.push_message("slow down", chat_id=DM)
            await wait_text(fake, DM, "echo: slow down")
            await run.settle()
        refused, sent = fake.calls("im.message.reply")
        assert (refused.http_status, refused.code, sent.code) == (429, 99991400, 0)
        assert sent.at - refused.at >= 0.95
        assert texts(fake, DM) == ["echo: slow down"]  # exactly one answer in the chat


async def test_a_rate_limited_placeholder_still_gives_exactly_one_answer(tmp_path: Path) -> None:
    with FakeFeishu() as fake:
        fake.rate_limit("im.message.reply", reset_s=1)
        agent = FakeAgent()
        release = agent.hold("slow")
        settings = feishu_settings(tmp_path, fake)
        async with feishu_daemon(settings, fake, agent) as run:
            fake.push_message("slow down too", chat_id=DM)
            await fake.await_call("im.message.reply", lambda c: c.http_status == 429)
            release.set()  # the answer is ready while the placeholder waits out the limit
            await wait_text(fake, DM, "echo: slow down too")
            await run.settle()
        [answer] = fake.sent_messages(DM)  # the refused placeholder was never shown
        assert shown_text(fake, answer) == "echo: slow down too"
        assert answer.card_id is None or not fake.card(answer.card_id).streaming_mode


async def test_a_revoked_token_is_refreshed_and_the_call_retried(tmp_path: Path) -> None:
    with FakeFeishu() as fake:
        settings = feishu_settings(tmp_path, fake)
        async with feishu_daemon(settings, fake, FakeAgent()) as run:
            fake.revoke_token()
            fake.push_message("after expiry", chat_id=DM)
            await wait_text(fake, DM, "echo: after expiry")
            fake.expire_token_next("im.message.reply", code=99991661)
            fake.push_message("missing token", chat_id=DM)
            await wait_text(fake, DM, "echo: missing token")
            await run.settle()
        assert len(fake.tokens_issued()) == 2
        codes = [c.code for c in fake.calls() if c.code]
        assert 99991663 in codes
        assert 99991661 in codes
        assert "auth_failed" not in run.health.kinds()
        assert texts(fake, DM) == ["echo: after expiry", "echo: missing token"]


async def test_a_recalled_reply_target_is_answered_in_the_chat(tmp_path: Path) -> None:
    with FakeFeishu() as fake:
        fake.fail_next("im.message.reply", code=230011, msg="The message is recalled.")
        settings = feishu_settings(tmp_path, fake)
        async with feishu_daemon(settings, fake, FakeAgent()) as run:
            fake.push_message("gone soon", chat_id=DM)
            await wait_text(fake, DM, "echo: gone soon")
            await run.settle()
        [answer] = fake.sent_messages(DM)
        assert answer.parent_id == ""
        create = fake.calls("im.message.create")[0]
        assert create.query["receive_id_type"] == "chat_id"
        assert json.loads(create.json["content"])["schema"] == "2.0"
