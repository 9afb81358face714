"""DingTalk delivery against FakeDingTalk: the OpenAPI after the session webhook expired,
rate limits and server errors retried into exactly one answer, a revoked token refetched,
files in and out, and AI-card streaming that always ends finished."""

from __future__ import annotations

from collections.abc import Awaitable
from pathlib import Path

import pytest

from bot.errors import TransientSendError
from bot.messages import ChatType, Destination
from bot.ports import FinalAnswer, PresentedFile, TextDelta
from bot.records import OutboxRow, OutboxState
from channels.dingtalk.api import OpenApi, new_session
from channels.dingtalk.cards import Cards
from tests.channels.dingtalk_support import (
    ALICE,
    GROUP,
    TEMPLATE,
    WAIT_S,
    dingtalk_daemon,
    dingtalk_settings,
    texts,
    wait_text,
)
from tests.fakes.agent import FakeAgent
from tests.fakes.common.waiting import eventually
from tests.fakes.dingtalk_api import FakeDingTalk
from tests.fakes.scripted_agent import ScriptedAgent

TINY_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


async def test_an_expired_session_webhook_falls_back_to_the_openapi(tmp_path: Path) -> None:
    with FakeDingTalk() as fake:
        agent = FakeAgent()
        async with dingtalk_daemon(dingtalk_settings(tmp_path, fake), fake, agent) as run:
            fake.push_message("first", sender_staff_id=ALICE)
            await wait_text(fake, ALICE, "echo: first")
            fake.expire_sessions()
            fake.push_message("second", sender_staff_id=ALICE)
            await wait_text(fake, ALICE, "echo: second")
            fake.push_message(
                "in the group", conversation_type="2", conversation_id=GROUP, at_bot=True,
                session_ttl_s=-1,
            )  # fmt: skip
            await wait_text(fake, GROUP, "echo: in the group")
            await run.settle()
        assert [m.via for m in fake.sent_messages(ALICE)] == ["session", "otom"]
        assert [m.via for m in fake.sent_messages(GROUP)] == ["group"]


async def test_a_rate_limit_is_retried_into_exactly_one_answer(tmp_path: Path) -> None:
    with FakeDingTalk() as fake:
        agent = FakeAgent()
        async with dingtalk_daemon(dingtalk_settings(tmp_path, fake), fake, agent) as run:
            fake.rate_limit("/v1.0/robot/*", times=2)
            fake.push_message("limited", sender_staff_id=ALICE, session_ttl_s=-1)
            await wait_text(fake, ALICE, "echo: limited")
            # the session webhook's "send too fast": the same answer through the OpenAPI
            fake.rate_limit("/robot/sendBySession", style="body", retry_after_s=0.2)
            fake.push_message("limited again", sender_staff_id=ALICE)
            await wait_text(fake, ALICE, "echo: limited again")
            await run.settle()
        assert texts(fake, ALICE) == ["echo: limited", "echo: limited again"]


async def test_a_chat_throttled_on_the_session_webhook_is_answered_through_the_openapi(
    tmp_path: Path,
) -> None:
    """130101 ("send too fast") refused the reply, so it goes out through the OpenAPI, whose
    quota is its own, at once: once, not after a minute (and no Retry-After is sent)."""
    with FakeDingTalk() as fake:
        agent = FakeAgent()
        async with dingtalk_daemon(dingtalk_settings(tmp_path, fake), fake, agent) as run:
            fake.rate_limit("/robot/sendBySession", style="body")
            fake.push_message("too fast", sender_staff_id=ALICE)
            await wait_text(fake, ALICE, "echo: too fast")
            await run.settle()
        assert texts(fake, ALICE) == ["echo: too fast"]
        assert [m.via for m in fake.sent_messages(ALICE)] == ["otom"]


async def test_server_errors_are_retried_and_a_revoked_token_refetched(tmp_path: Path) -> None:
    with FakeDingTalk() as fake:
        agent = FakeAgent()
        async with dingtalk_daemon(dingtalk_settings(tmp_path, fake), fake, agent) as run:
            fake.push_message("warm up", sender_staff_id=ALICE, session_ttl_s=-1)
            await wait_text(fake, ALICE, "echo: warm up")
            issued = len(fake.tokens_issued)
            fake.revoke_tokens()
            fake.fail_server_error("/v1.0/robot/oToMessages/batchSend", http_status=502)
            fake.push_message("after revoke", sender_staff_id=ALICE, session_ttl_s=-1)
            await wait_text(fake, ALICE, "echo: after revoke")
            await run.settle()
            assert run.health.kinds().count("auth_failed") == 0
        assert len(fake.tokens_issued) == issued + 1
        assert texts(fake, ALICE) == ["echo: warm up", "echo: after revoke"]


async def test_a_picture_in_is_downloaded_and_files_go_out_after_the_text(
    tmp_path: Path,
) -> None:
    with FakeDingTalk() as fake:
        agent = FakeAgent()
        outputs = tmp_path / "threads" / "t1" / "outputs"
        outputs.mkdir(parents=True)
        (outputs / "chart.png").write_bytes(TINY_PNG)
        (outputs / "report.pdf").write_bytes(b"%PDF-1.4 report")
        agent.files_to_present.extend([
            PresentedFile(path=outputs / "chart.png", name="chart.png"),
            PresentedFile(path=outputs / "report.pdf", name="report.pdf"),
        ])  # fmt: skip
        async with dingtalk_daemon(dingtalk_settings(tmp_path, fake), fake, agent) as run:
            fake.add_download("dl-picture-1", TINY_PNG, file_name="photo.png")
            fake.push_message(
                None, sender_staff_id=ALICE, msgtype="picture",
                content={"downloadCode": "dl-picture-1"},
            )  # fmt: skip
            await fake.await_until(lambda: len(fake.sent_messages(ALICE)) >= 3, WAIT_S)
            await run.settle()
        [upload] = agent.runs[0].turn.uploads
        assert upload.path.read_bytes() == TINY_PNG
        kinds = [m.msgtype for m in fake.sent_messages(ALICE)]
        assert kinds == ["markdown", "image", "file"]
        uploads = {u.file_name: u for u in fake.uploads.values()}
        assert uploads["chart.png"].data == TINY_PNG
        assert uploads["report.pdf"].data == b"%PDF-1.4 report"
        pdf = fake.sent_messages(ALICE)[2]
        assert pdf.file_name == "report.pdf"


async def test_an_ai_card_streams_the_answer_and_ends_finished(tmp_path: Path) -> None:
    with FakeDingTalk() as fake:
        fake.add_card_template(TEMPLATE)
        agent = ScriptedAgent()
        settings = dingtalk_settings(tmp_path, fake, dingtalk={"card_template_id": TEMPLATE})
        async with dingtalk_daemon(settings, fake, agent) as run:
            assert run.channel.capabilities.edits
            fake.push_message("stream it", sender_staff_id=ALICE)
            agent.feed(TextDelta(text="Thinking about "))
            await fake.await_until(lambda: len(fake.cards) == 1, WAIT_S)
            agent.feed(TextDelta(text="it some more"))
            await fake.await_call("/v1.0/card/streaming")
            agent.feed(FinalAnswer(text="Thinking about it some more. **Done.**"))
            await fake.await_until(lambda: all(c.finalized for c in fake.cards.values()), WAIT_S)
            await run.settle()
        [card] = fake.cards.values()
        assert card.template_id == TEMPLATE
        assert card.space == "IM_ROBOT"
        assert card.flow_status == "3"
        assert "**Done.**" in card.content["content"]
        assert texts(fake, ALICE) == []  # the answer is the card, not a second message


async def test_a_stopped_turn_finishes_its_card(tmp_path: Path) -> None:
    with FakeDingTalk() as fake:
        fake.add_card_template(TEMPLATE)
        agent = ScriptedAgent()
        settings = dingtalk_settings(tmp_path, fake, dingtalk={"card_template_id": TEMPLATE})
        async with dingtalk_daemon(settings, fake, agent) as run:
            fake.push_message("go on and on", sender_staff_id=ALICE)
            agent.feed(TextDelta(text="partial"))
            await fake.await_until(lambda: len(fake.cards) == 1, WAIT_S)
            fake.push_message("/stop", sender_staff_id=ALICE)
            await fake.await_until(lambda: all(c.finalized for c in fake.cards.values()), WAIT_S)
            await run.settle()
        [card] = fake.cards.values()
        assert card.flow_status == "3"


async def test_a_card_whose_delivery_failed_is_delivered_on_the_retry() -> None:
    """The create succeeded, the deliver got a 502: a retry with the same key finds the
    outTrackId taken (it is derived from the key) and delivers that card, not a second."""
    with FakeDingTalk() as fake:
        fake.add_card_template(TEMPLATE)
        fake.add_user(ALICE)
        fake.fail_server_error("/v1.0/card/instances/deliver", http_status=502)
        destination = Destination(channel="dingtalk", chat_id=ALICE, chat_type=ChatType.DM)
        async with new_session() as session:
            api = OpenApi(session, fake.origin, fake.client_id, fake.client_secret)
            cards = Cards(api, fake.client_id, TEMPLATE, "content")
            with pytest.raises(TransientSendError):
                await cards.start(destination, "Thinking", "row/placeholder/0")
            first = next(iter(fake.cards.values()))
            assert not first.delivered
            message_id = await cards.start(destination, "Thinking", "row/placeholder/0")
            other = await cards.start(destination, "Thinking", "another/placeholder/0")
        assert message_id == f"card:{first.out_track_id}"
        assert other != message_id
        assert len(fake.cards) == 2
        assert all(c.delivered for c in fake.cards.values())


async def test_a_group_the_robot_left_is_forbidden_without_blocking_others(
    tmp_path: Path,
) -> None:
    with FakeDingTalk() as fake:
        agent = FakeAgent()
        fake.add_group(GROUP)
        fake.remove_from_group(GROUP)
        async with dingtalk_daemon(dingtalk_settings(tmp_path, fake), fake, agent) as run:
            fake.push_message(
                "anyone?", conversation_type="2", conversation_id=GROUP, at_bot=True,
                session_ttl_s=-1,
            )  # fmt: skip

            async def dead() -> list[OutboxRow]:
                return await run.kernel.store.outbox.listing(OutboxState.DEAD)

            await eventually(lambda: _nonempty(dead()))
            fake.push_message("still there", sender_staff_id=ALICE)
            await wait_text(fake, ALICE, "echo: still there")
            await run.settle()
            [row] = await dead()
        assert row.last_error is not None
        assert row.last_error.startswith("forbidden")
        assert fake.sent_messages(GROUP) == []


async def _nonempty(rows: Awaitable[list[OutboxRow]]) -> bool:
    return bool(await rows)
