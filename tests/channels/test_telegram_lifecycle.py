"""Start, park, reconnect, webhook mode and probing of the Telegram channel (design §12-§14)."""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp
import pytest

from bot.app import Daemon, DaemonOptions, Overrides
from bot.errors import AuthFailed, ChannelError
from bot.ops.routes import RouteTable
from bot.ports import ChannelContext
from channels.telegram import TelegramChannel
from channels.telegram.webhook import SECRET_HEADER
from tests.bot.harness import http_get, registry_daemon, started_without_waiting
from tests.channels.health_log import HealthLog
from tests.channels.telegram_support import (
    free_port,
    telegram_daemon,
    telegram_settings,
    wait_text,
)
from tests.fakes.agent import FakeAgent
from tests.fakes.common.waiting import eventually
from tests.fakes.telegram_api import FakeTelegram

FORGED = {
    "message_id": 5,
    "date": 0,
    "chat": {"id": 42, "type": "private"},
    "from": {"id": 42, "is_bot": False, "first_name": "Mallory"},
    "text": "forged",
}


async def test_an_invalid_token_parks_the_channel_and_the_daemon_lives(tmp_path: Path) -> None:
    with FakeTelegram() as fake:
        settings = telegram_settings(tmp_path, fake, telegram={"token": "123456:WRONG"})
        async with registry_daemon(settings, FakeAgent()) as daemon:
            await fake.await_call("getMe")

            async def parked() -> bool:
                return (await http_get(daemon, "/readyz"))[0] == 503

            await eventually(parked)
            _, body = await http_get(daemon, "/readyz")
            assert "channel telegram: parked" in body
            assert "WRONG" not in body
            assert (await http_get(daemon, "/healthz"))[0] == 200
        assert not fake.calls("getUpdates")


async def test_a_token_revoked_while_polling_parks_the_channel(tmp_path: Path) -> None:
    with FakeTelegram() as fake:
        async with telegram_daemon(telegram_settings(tmp_path, fake), FakeAgent()) as run:
            await fake.await_call("getUpdates")
            fake.set_token_valid(False)
            await run.health.wait_for("auth_failed")
        assert ("auth_failed", "Telegram rejected the bot token") in run.health.events


async def test_polling_survives_server_errors_and_reports_them(tmp_path: Path) -> None:
    agent = FakeAgent()
    with FakeTelegram() as fake:
        async with telegram_daemon(telegram_settings(tmp_path, fake), agent) as run:
            fake.fail_next("getUpdates", status=502, description="Bad Gateway")
            fake.fail_next("getUpdates", status=429, description="Too Many Requests: retry after 1",
                           retry_after=1)  # fmt: skip
            fake.push_message("still there?")
            await wait_text(fake, 42, "echo: still there?", within=10)
            await run.settle()
            assert run.health.kinds()[:3] == ["connected", "disconnected", "connected"]


async def test_webhook_mode_checks_the_secret(tmp_path: Path) -> None:
    port = free_port()
    webhook = {
        "url": f"http://127.0.0.1:{port}/telegram/webhook",
        "secret_token": "s3cret-Token_1-of-the-test",
    }
    with FakeTelegram() as fake:
        settings = telegram_settings(
            tmp_path, fake, http={"port": port}, telegram={"mode": "webhook", "webhook": webhook}
        )
        async with registry_daemon(settings, FakeAgent()):
            registered = await fake.await_call("setWebhook")
            assert registered.params["url"] == webhook["url"]
            assert registered.params["secret_token"] == webhook["secret_token"]
            update_id = fake.push_message("via webhook")["update_id"]
            await wait_text(fake, 42, "echo: via webhook", within=10)
            body = json.dumps({"update_id": 999_001, "message": FORGED}).encode()
            assert await fake.apush_raw_webhook(body, secret="wrong") == 403  # noqa: S106
            assert await fake.apush_raw_webhook(body, secret=None) == 403
        assert (update_id, 200) in fake.webhook_deliveries()
        assert not fake.calls("getUpdates")
        assert all("forged" not in str(m.get("text")) for m in fake.chat_messages(42))


async def test_an_update_posted_while_the_channel_starts_is_taken_not_refused(
    tmp_path: Path,
) -> None:
    """After a restart Telegram delivers to the webhook as soon as the HTTP server listens,
    before getMe and setWebhook are done; a 503 there would make it back off for minutes."""
    port = free_port()
    secret = "s3cret-Token_1-of-the-test"  # noqa: S105 - a test secret
    webhook = {"url": f"http://127.0.0.1:{port}/telegram/webhook", "secret_token": secret}
    update = {"update_id": 777, "message": {"message_id": 5, "date": 1700000000,
              "chat": {"id": 42, "type": "private"},
              "from": {"id": 42, "is_bot": False, "first_name": "Alice"},
              "text": "sent during the restart"}}  # fmt: skip
    with FakeTelegram() as fake:
        fake.push_message("hello")  # a chat the bot may answer in
        fake.delay_next("getMe", 1.0)  # the channel is still starting when the update arrives
        settings = telegram_settings(
            tmp_path, fake, http={"port": port}, telegram={"mode": "webhook", "webhook": webhook}
        )
        options = DaemonOptions(overrides=Overrides(agent=FakeAgent()))
        daemon = Daemon(settings, options)
        async with started_without_waiting(daemon):
            await eventually(lambda: _listening(daemon))
            assert not daemon.ready.is_set()
            headers = {SECRET_HEADER: secret}
            async with (
                aiohttp.ClientSession() as session,
                session.post(webhook["url"], json=update, headers=headers) as response,
            ):
                status = response.status
            await wait_text(fake, 42, "echo: sent during the restart", within=10)
    assert status == 200


async def _listening(daemon: Daemon) -> bool:
    return daemon.http is not None and daemon.http.port is not None


async def test_probe_reports_the_bot_or_the_reason(tmp_path: Path) -> None:
    with FakeTelegram() as fake:
        context = ChannelContext(routes=RouteTable(), state_dir=tmp_path, health=HealthLog())
        good = TelegramChannel(telegram_settings(tmp_path, fake), context)
        assert await good.probe() == f"@{fake.bot_username} (id {fake.bot_id})"
        await good.aclose()
        bad = TelegramChannel(
            telegram_settings(tmp_path, fake, telegram={"token": "123456:WRONG"}), context
        )
        with pytest.raises(AuthFailed, match="rejected the bot token"):
            await bad.probe()
    gone = TelegramChannel(telegram_settings(tmp_path, fake), context)
    with pytest.raises(ChannelError, match="not reachable"):
        await gone.probe()


async def test_a_batch_larger_than_the_inbound_queue_is_taken_in_order(tmp_path: Path) -> None:
    """One getUpdates answer holds more messages than the queue has room for: the kernel takes
    what fits (one journal write), the rest is fetched again, and Telegram's order is kept."""
    agent = FakeAgent()
    chats = [100 + n for n in range(5)]
    with FakeTelegram() as fake:
        pushed = [fake.push_message(f"m{n}", chat_id=chat, user_id=chat) for n, chat in
                  enumerate(chats)]  # fmt: skip
        settings = telegram_settings(tmp_path, fake, daemon={"inbound_queue_size": 2})
        async with telegram_daemon(settings, agent) as run:
            for n, chat in enumerate(chats):
                await wait_text(fake, chat, f"echo: m{n}", within=15)
            await run.settle()
            journal = []
            for update in pushed:
                message = update["message"]
                found = await run.kernel.store.inbound.find("telegram", str(message["message_id"]))
                journal += [e for e in found if e.message.chat_id == str(message["chat"]["id"])]
    assert [entry.message.text for entry in journal] == [f"m{n}" for n in range(5)]
    assert [entry.id for entry in journal] == sorted(entry.id for entry in journal)
    assert sorted(done.turn.text for done in agent.runs) == [f"m{n}" for n in range(5)]
