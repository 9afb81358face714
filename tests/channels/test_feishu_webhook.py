"""HTTP events mode: the URL check, the verification token, the signature and encryption,
and the status code as the ack."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.channels.feishu_support import DM, feishu_daemon, feishu_settings, wait_text
from tests.fakes.agent import FakeAgent
from tests.fakes.feishu_api import FakeFeishu


async def test_url_verification_is_answered_with_the_challenge(tmp_path: Path) -> None:
    with FakeFeishu() as fake:
        settings = feishu_settings(tmp_path, fake, mode="webhook")
        async with feishu_daemon(settings, fake, FakeAgent()) as run:
            sealed = await fake.aurl_verification(run.events_url)
            plain = await fake.aurl_verification(run.events_url, encrypt=False)
        assert sealed[0] == plain[0] == 200
        assert set(sealed[1]) == {"challenge"}
        assert set(plain[1]) == {"challenge"}


async def test_plain_events_are_accepted_without_encryption(tmp_path: Path) -> None:
    with FakeFeishu(encrypt_key="") as fake:
        settings = feishu_settings(tmp_path, fake, mode="webhook")
        async with feishu_daemon(settings, fake, FakeAgent()) as run:
            payload = fake.message_payload("plain hello", chat_id=DM)
            status, _ = await fake.apost_event(run.events_url, payload)
            assert status == 200
            await wait_text(fake, DM, "echo: plain hello")
            await run.settle()


async def test_forged_events_are_refused(tmp_path: Path) -> None:
    with FakeFeishu() as fake:
        agent = FakeAgent()
        settings = feishu_settings(tmp_path, fake, mode="webhook")
        async with feishu_daemon(settings, fake, agent) as run:
            payload = fake.message_payload("forged", chat_id=DM)
            bad_sign = await _post(fake, run.events_url, payload, bad_signature=True)
            payload["header"]["token"] = "wrong"  # noqa: S105 - a forged token
            bad_token = await _post(fake, run.events_url, payload)
            await run.settle()
        assert (bad_sign, bad_token) == (401, 401)
        assert agent.runs == []


async def test_events_after_intake_stopped_are_refused_for_redelivery(tmp_path: Path) -> None:
    with FakeFeishu() as fake:
        agent = FakeAgent()
        settings = feishu_settings(tmp_path, fake, mode="webhook")
        async with feishu_daemon(settings, fake, agent) as run:
            await run.channel.stop_intake()
            payload = fake.message_payload("too late", chat_id=DM)
            status = await _post(fake, run.events_url, payload)
        assert status == 503
        assert agent.runs == []


async def _post(
    fake: FakeFeishu, url: str, payload: dict[str, object], *, bad_signature: bool = False
) -> int:
    status, _ = await asyncio.to_thread(
        fake.post_event, url, payload, encrypt=True, bad_signature=bad_signature
    )
    return status
