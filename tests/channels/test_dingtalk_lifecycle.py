"""The DingTalk channel's lifecycle against FakeDingTalk: refused credentials park it (the
daemon keeps serving), ``disconnect`` frames and dropped sockets reconnect, pings are acked,
a callback the kernel refused stays unacked and is redelivered, stops leave no task or socket
behind, reloads keep exactly one connection, and ``probe`` for ``check --online``."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml

from bot.config.loader import load_settings
from bot.errors import AuthFailed, TransientSendError
from bot.messages import ChatType, Destination, InboundMessage, OutboundKind, TextEdit
from bot.ports import Admission
from tests.bot.harness import registry_daemon
from tests.channels.dingtalk_support import (
    ALICE,
    TEMPLATE,
    WAIT_S,
    build_channel,
    dingtalk_daemon,
    dingtalk_settings,
    wait_text,
)
from tests.channels.health_log import HealthLog
from tests.channels.parking_support import parks_while_another_serves
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import FakeChannel
from tests.fakes.dingtalk_api import FakeDingTalk


def _dingtalk_tasks() -> list[asyncio.Task[object]]:
    return [t for t in asyncio.all_tasks() if t.get_name().startswith("channel:dingtalk")]


async def test_refused_credentials_park_dingtalk_while_the_daemon_serves(tmp_path: Path) -> None:
    with FakeDingTalk() as fake:
        fake.refuse_credentials = True
        other = FakeChannel()
        settings = dingtalk_settings(tmp_path, fake)
        async with dingtalk_daemon(settings, fake, FakeAgent(), others=[other],
                                   wait_connected=False) as run:  # fmt: skip
            await parks_while_another_serves(run.kernel, "dingtalk", other)
        assert fake.connections == 0
        assert _dingtalk_tasks() == []


async def test_a_disconnect_frame_reconnects_and_the_next_message_is_answered(
    tmp_path: Path,
) -> None:
    with FakeDingTalk() as fake:
        async with dingtalk_daemon(dingtalk_settings(tmp_path, fake), fake, FakeAgent()) as run:
            ping = await asyncio.to_thread(fake.send_ping)
            assert (await fake.await_ack(ping)).code == 200
            frame = await asyncio.to_thread(fake.send_disconnect)
            await fake.await_ack(frame)
            await run.health.wait_for("disconnected")
            await run.health.wait_for("connected", count=2)
            fake.push_message("after the disconnect", sender_staff_id=ALICE)
            await wait_text(fake, ALICE, "echo: after the disconnect")
            await run.settle()
        assert fake.connections == 2
        assert len(fake.open_requests) == 2
        assert fake.protocol_errors == []


async def test_a_dropped_socket_reconnects_and_keeps_answering(tmp_path: Path) -> None:
    with FakeDingTalk() as fake:
        async with dingtalk_daemon(dingtalk_settings(tmp_path, fake), fake, FakeAgent()) as run:
            await asyncio.to_thread(fake.drop_socket)
            await run.health.wait_for("disconnected")
            await run.health.wait_for("connected", count=2)
            fake.push_message("after the drop", sender_staff_id=ALICE)
            await wait_text(fake, ALICE, "echo: after the drop")
            await run.settle()
        assert fake.connections == 2


async def test_credentials_refused_while_reconnecting_are_reported(tmp_path: Path) -> None:
    with FakeDingTalk() as fake:
        async with dingtalk_daemon(dingtalk_settings(tmp_path, fake), fake, FakeAgent()) as run:
            fake.refuse_credentials = True
            await asyncio.to_thread(fake.drop_socket)
            await run.health.wait_for("auth_failed")


class Refusing:
    """The kernel's intake as a test double: refuses the first ``refusals`` messages."""

    def __init__(self, refusals: int) -> None:
        self.refusals = refusals
        self.seen: list[str] = []
        self.accepted = asyncio.Event()

    async def __call__(self, message: InboundMessage) -> Admission:
        self.seen.append(message.message_id)
        if len(self.seen) <= self.refusals:
            return Admission.QUEUE_FULL
        self.accepted.set()
        return Admission.ACCEPTED

    async def many(self, messages: Sequence[InboundMessage]) -> list[Admission]:
        return [await self(message) for message in messages]


async def test_a_refused_callback_is_left_unacked_and_redelivered(tmp_path: Path) -> None:
    with FakeDingTalk() as fake:
        fake.redeliver_unacked(after_s=0.3)
        channel = build_channel(dingtalk_settings(tmp_path, fake), HealthLog())
        intake = Refusing(refusals=1)
        await channel.start(intake)
        try:
            frame = fake.push_message("try me twice", sender_staff_id=ALICE)
            ack = await fake.await_ack(frame, timeout=WAIT_S)
            await asyncio.wait_for(intake.accepted.wait(), WAIT_S)
        finally:
            await channel.aclose()
        payload_id = intake.seen[0]
        assert intake.seen == [payload_id, payload_id]
        assert ack.code == 200
        assert [d.attempt for d in fake.deliveries if d.message_id == frame] == [1, 2]


async def test_stop_leaves_no_task_and_no_socket(tmp_path: Path) -> None:
    with FakeDingTalk() as fake:
        async with dingtalk_daemon(dingtalk_settings(tmp_path, fake), fake, FakeAgent()):
            await fake.await_connected(1)
            assert _dingtalk_tasks() != []
        assert _dingtalk_tasks() == []
        await fake.await_until(lambda: fake.live_connections == 0)


async def test_two_reloads_in_a_row_keep_one_connection(tmp_path: Path) -> None:
    with FakeDingTalk() as fake:
        path = tmp_path / "switchboard.yaml"
        config = dingtalk_settings(tmp_path, fake).model_dump(mode="json")
        config["channels"] = {"dingtalk": config["channels"]["dingtalk"]}
        config["channels"]["dingtalk"]["client_secret"] = fake.client_secret
        path.write_text(yaml.safe_dump(config))
        settings = load_settings(path, {})
        async with registry_daemon(settings, FakeAgent(), config_path=path) as daemon:
            await fake.await_connected(1)
            assert daemon.reloader is not None
            for count, user in ((2, "staff_a"), (3, "staff_b")):
                config["channels"]["dingtalk"]["allowed_users"] = [user]
                path.write_text(yaml.safe_dump(config))
                await daemon.reloader.reload("test")
                await fake.await_until(
                    functools.partial(lambda n: fake.connections == n
                                      and fake.live_connections == 1, count),
                    timeout=15,
                )  # fmt: skip
            fake.push_message("still one", sender_staff_id=ALICE)
            await wait_text(fake, ALICE, "echo: still one")
        await fake.await_until(lambda: fake.live_connections == 0)


async def test_probe_fetches_a_token_and_reports_refused_credentials(tmp_path: Path) -> None:
    with FakeDingTalk() as fake:
        channel = build_channel(dingtalk_settings(tmp_path, fake), HealthLog())
        detail = await channel.probe()
        assert fake.client_id in detail
        fake.refuse_credentials = True
        with pytest.raises(AuthFailed):
            await build_channel(dingtalk_settings(tmp_path, fake), HealthLog()).probe()
        assert [c.path for c in fake.calls()] == ["/v1.0/oauth2/accessToken"] * 2


async def test_the_sdks_loggers_go_through_ours_and_stay_quiet(tmp_path: Path) -> None:
    """dingtalk-stream gives its loggers stderr handlers of their own at INFO, and its lines
    carry whole frames (message text): after start they propagate to the daemon's logging at
    ERROR only."""
    with FakeDingTalk() as fake:
        async with dingtalk_daemon(dingtalk_settings(tmp_path, fake), fake, FakeAgent()):
            for name in ("dingtalk_stream.client", "dingtalk_stream.handler"):
                sdk = logging.getLogger(name)
                assert sdk.propagate
                assert sdk.level == logging.ERROR
                assert not [h for h in sdk.handlers if isinstance(h, logging.StreamHandler)]


async def test_a_card_edit_before_the_channel_runs_is_retried_not_dropped(tmp_path: Path) -> None:
    """Crash recovery submits its "interrupted" card edits while the channel is still
    starting; an edit then must fail as transient (the outbox retries it), never count as
    done with nothing sent (seen as a card left "processing" after kill -9)."""
    with FakeDingTalk() as fake:
        fake.add_card_template(TEMPLATE)
        settings = dingtalk_settings(tmp_path, fake, dingtalk={"card_template_id": TEMPLATE})
        channel = build_channel(settings, HealthLog())
        edit = TextEdit(
            destination=Destination(channel="dingtalk", account_id="", chat_id=ALICE,
                                    chat_type=ChatType.DM),
            message_id="card:left-by-a-crash", text="interrupted", kind=OutboundKind.NOTICE,
        )  # fmt: skip
        with pytest.raises(TransientSendError):
            await channel.edit_text(edit)
