"""``switchboard run`` as an operator runs it, per platform against its loopback fake: a push
the HTTP API accepted (202) whose send the platform turned away (a rate limit), then a
``kill -9`` before the retry, is delivered exactly once by the next start on the same state
(design §19: everything is recorded before the 202)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bench.soak_daemon import free_port
from tests.bot.ops.push_support import TOKEN
from tests.channels import dingtalk_support, feishu_support, slack_support, telegram_support
from tests.channels.cli_support import cli_env, start_run
from tests.fakes.common.waiting import eventually
from tests.fakes.dingtalk_api import FakeDingTalk
from tests.fakes.feishu_api import FakeFeishu
from tests.fakes.slack_api import FakeSlack
from tests.fakes.telegram_api import FakeTelegram

NEEDLE = "deploy 42 is out"
RETRY_S = 3
"""The platform's rate limit: the retry the killed daemon never makes."""
WITHIN_S = 30.0
"""Bounds for a cold start of ``python -m bot`` on a busy machine (never waited out)."""
OTOM = "/v1.0/robot/oToMessages/batchSend"
SLACK_DM = "D0001"


@dataclass(frozen=True, slots=True, kw_only=True)
class Platform:
    """What differs between the platforms: the channel's config, how a user says hello (so
    the daemon knows the chat), the fault that turns the push's send away, the calls of that
    send, and what the chat shows."""

    name: str
    channel: Callable[[Any], str]
    hello: Callable[[Any], None]
    chat: str
    refuse_once: Callable[[Any], None]
    sends: Callable[[Any], int]
    shown: Callable[[Any], list[str]]


def _telegram_hello(fake: FakeTelegram) -> None:
    fake.push_message("hello there")


def _telegram_refuse(fake: FakeTelegram) -> None:
    fake.fail_next(
        "sendMessage", status=429, description=f"Too Many Requests: retry after {RETRY_S}",
        retry_after=RETRY_S,
    )  # fmt: skip


def _dingtalk_hello(fake: FakeDingTalk) -> None:
    fake.push_message("hello there", sender_staff_id=dingtalk_support.ALICE)


def _slack_hello(fake: FakeSlack) -> None:
    fake.push_message("hello there", channel=SLACK_DM, channel_type="im")


def _slack_refuse(fake: FakeSlack) -> None:
    fake.fail_next("chat.postMessage", error="ratelimited", status=429, retry_after=RETRY_S)


def _feishu_hello(fake: FakeFeishu) -> None:
    fake.push_message("hello there", chat_id=feishu_support.DM)


PLATFORMS = (
    Platform(
        name="telegram",
        channel=lambda fake: (
            f"  telegram: {{enabled: true, token: '{fake.token}',"
            f" api_base_url: '{fake.api_origin}'}}\n"
        ),
        hello=_telegram_hello,
        chat="42",
        refuse_once=_telegram_refuse,
        sends=lambda fake: len(fake.calls("sendMessage")),
        shown=lambda fake: telegram_support.texts(fake, 42),
    ),
    Platform(
        name="slack",
        channel=lambda fake: (
            f"  slack: {{enabled: true, mode: socket, bot_token: '{fake.ids.bot_token}',"
            f" app_token: '{fake.ids.app_token}', api_base_url: '{fake.api_base_url}'}}\n"
        ),
        hello=_slack_hello,
        chat=SLACK_DM,
        refuse_once=_slack_refuse,
        sends=lambda fake: len(fake.calls("chat.postMessage")),
        shown=lambda fake: slack_support.texts(fake, SLACK_DM),
    ),
    Platform(
        name="dingtalk",
        channel=lambda fake: (
            f"  dingtalk: {{enabled: true, client_id: {fake.client_id},"
            f" client_secret: {fake.client_secret}, api_base_url: '{fake.origin}'}}\n"
        ),
        hello=_dingtalk_hello,
        chat=dingtalk_support.ALICE,
        refuse_once=lambda fake: fake.rate_limit(OTOM, retry_after_s=RETRY_S),
        sends=lambda fake: len(fake.calls(OTOM)),
        shown=lambda fake: dingtalk_support.texts(fake, dingtalk_support.ALICE),
    ),
    Platform(
        name="feishu",
        channel=lambda fake: (
            f"  feishu: {{enabled: true, app_id: {fake.app_id}, app_secret: {fake.app_secret},"
            f" domain: '{fake.origin}'}}\n"
        ),
        hello=_feishu_hello,
        chat=feishu_support.DM,
        refuse_once=lambda fake: fake.rate_limit("im.message.create", reset_s=RETRY_S),
        sends=lambda fake: len(fake.calls("im.message.create")),
        shown=lambda fake: feishu_support.texts(fake, feishu_support.DM),
    ),
)
FAKES: dict[str, Callable[[], contextlib.AbstractContextManager[Any]]] = {
    "telegram": FakeTelegram,
    "slack": FakeSlack,
    "dingtalk": FakeDingTalk,
    "feishu": FakeFeishu,
}


def _config(tmp_path: Path, port: int, channel: str) -> Path:
    config = tmp_path / "switchboard.yaml"
    config.write_text(
        "config_version: 1\n"
        "state_dir: ${SWITCHBOARD_STATE_DIR}\n"
        "agent: {backend: echo}\n"
        f"http: {{host: 127.0.0.1, port: {port},"
        f" push_api: {{enabled: true, token: '{TOKEN}'}}}}\n"
        "daemon: {shutdown_grace_s: 5}\n"
        "access: {dm_policy: open}\n"
        f"channels:\n{channel}"
    )
    return config


async def _push(port: int, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    headers = {"Authorization": f"Bearer {TOKEN}", "Idempotency-Key": "deploy-42"}
    url = f"http://127.0.0.1:{port}/api/v1/messages"
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=json.dumps(body), headers=headers) as response,
    ):
        return response.status, await response.json()


def _waiter(check: Callable[[], bool]) -> Callable[[], Awaitable[None]]:
    return lambda: eventually(check, within=WITHIN_S)


@contextlib.contextmanager
def _logged(path: Path) -> Iterator[Any]:
    with path.open("w") as log:
        yield log


@pytest.mark.parametrize("platform", PLATFORMS, ids=[p.name for p in PLATFORMS])
async def test_a_push_accepted_before_a_kill_9_arrives_exactly_once(
    tmp_path: Path, platform: Platform
) -> None:
    state, port = tmp_path / "state", free_port()
    env = {**cli_env(state), "PYTHONUNBUFFERED": "1"}
    with FAKES[platform.name]() as fake:
        config = _config(tmp_path, port, platform.channel(fake))
        with _logged(tmp_path / "run1.log") as log:
            first = start_run(config, log, env)
            try:
                platform.hello(fake)  # the daemon learns the chat (and answers it)
                await _waiter(lambda: any("hello there" in t for t in platform.shown(fake)))()
                before = platform.sends(fake)
                platform.refuse_once(fake)
                body = {"channel": platform.name, "chat": platform.chat, "text": NEEDLE}
                status, answer = await _push(port, body)
                await _waiter(lambda: platform.sends(fake) > before)()  # turned away
            finally:
                first.send_signal(signal.SIGKILL)
                await asyncio.to_thread(first.wait, 30)
        assert status == 202, answer
        assert not any(NEEDLE in text for text in platform.shown(fake))
        with _logged(tmp_path / "run2.log") as log:
            second = start_run(config, log, env)
            try:
                await _waiter(lambda: any(NEEDLE in t for t in platform.shown(fake)))()
            finally:
                second.send_signal(signal.SIGTERM)
                code = await asyncio.to_thread(second.wait, 30)
        shown = platform.shown(fake)
    assert first.returncode == -signal.SIGKILL
    assert code == 0, (tmp_path / "run2.log").read_text()
    assert sum(NEEDLE in text for text in shown) == 1, shown
