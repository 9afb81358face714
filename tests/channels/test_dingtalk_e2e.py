"""``switchboard`` as a user runs it with DingTalk enabled against FakeDingTalk: ``check
--online`` fetches an access token, ``run`` answers over the stream connection and drains on
SIGTERM, and kill -9 in the middle of a turn still gives exactly one answer, with the AI card
the killed process left finished (design §11). Every URL comes from the config file; the
environment carries a ``DINGTALK_OPENAPI_ENDPOINT`` that points nowhere, which must not matter."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import IO

from bot.pipeline.recovery import INTERRUPTED_PLACEHOLDER, PLACEHOLDER_TAG, RESUMING_NOTICE
from tests.channels.cli_support import REPO, cli_config, cli_env, start_run
from tests.channels.dingtalk_support import ALICE, TEMPLATE, texts, wait_text
from tests.fakes.common.waiting import eventually
from tests.fakes.dingtalk_api import FakeDingTalk
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall

NOWHERE = "http://127.0.0.1:9"
"""The discard port: a DingTalk call that followed the environment would fail."""


def _env(state_dir: Path) -> dict[str, str]:
    return {**cli_env(state_dir), "DINGTALK_OPENAPI_ENDPOINT": NOWHERE, "PYTHONUNBUFFERED": "1"}


def _config(
    tmp_path: Path, fake: FakeDingTalk, agent: str = "{backend: echo}", extra: str = ""
) -> Path:
    return cli_config(
        tmp_path,
        agent,
        "  dingtalk:\n"
        "    enabled: true\n"
        f"    client_id: {fake.client_id}\n"
        f"    client_secret: {fake.client_secret}\n"
        f"    api_base_url: {fake.origin}\n"
        f"{extra}",
    )


def _check_online(config: Path, state_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - our own CLI
        [sys.executable, "-m", "bot", "check", "-c", str(config), "--online"],
        capture_output=True, text=True, env=_env(state_dir), cwd=REPO, timeout=60, check=False,
    )  # fmt: skip


def test_check_online_fetches_an_access_token(tmp_path: Path) -> None:
    with FakeDingTalk() as fake:
        config = _config(tmp_path, fake)
        good = _check_online(config, tmp_path / "state")
        fake.refuse_credentials = True
        bad = _check_online(config, tmp_path / "state")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "channel dingtalk  ok" in good.stdout
    assert bad.returncode == 1
    assert "channel dingtalk  FAIL" in bad.stdout
    assert fake.client_secret not in good.stdout + good.stderr + bad.stdout + bad.stderr


def _start(config: Path, state_dir: Path, log: IO[str]) -> subprocess.Popen[str]:
    return start_run(config, log, _env(state_dir))


async def test_run_answers_over_the_stream_and_drains(tmp_path: Path) -> None:
    with FakeDingTalk() as fake:
        config = _config(tmp_path, fake)
        with (tmp_path / "run.log").open("w") as log:
            process = _start(config, tmp_path / "state", log)
            try:
                fake.push_message("hello from dingtalk", sender_staff_id=ALICE)
                await wait_text(fake, ALICE, "hello from dingtalk", within=45)
            finally:
                process.send_signal(signal.SIGTERM)
                code = await asyncio.to_thread(process.wait, 30)
        await fake.await_until(lambda: fake.live_connections == 0)
    output = (tmp_path / "run.log").read_text()
    assert code == 0, output
    assert "channel dingtalk: starting -> running" in output
    assert "hello from dingtalk" not in output  # message text is never logged at INFO
    assert "ticket=" not in output
    assert fake.protocol_errors == []


def _placeholder_recorded(state_dir: Path) -> bool:
    uri = f"file:{state_dir / 'switchboard.db'}?mode=ro"
    with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=5)) as db:
        rows = db.execute(
            "SELECT state FROM outbox WHERE idempotency_key LIKE ?", (f"%{PLACEHOLDER_TAG}%",)
        ).fetchall()
    return [state for (state,) in rows] == ["sent"]


async def test_kill_9_mid_turn_answers_once_and_finishes_the_card(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with FakeOpenAIServer() as model, FakeDingTalk() as fake:
        fake.add_card_template(TEMPLATE)
        agent = f"{{model: {{base_url: '{model.base_url}', api_key: sk-test}}}}"
        config = _config(tmp_path, fake, agent, f"    card_template_id: {TEMPLATE}\n")
        look = ToolCall(name="list_files", arguments={})
        model.script(
            Reply(text="Let me look at your files.", tool_calls=(look,)),
            Reply(text="an answer that never arrives", delay_s=60),
        )
        with (tmp_path / "run1.log").open("w") as log:
            first = _start(config, state, log)
            try:
                fake.push_message("please answer once", sender_staff_id=ALICE)
                await fake.await_until(lambda: len(fake.cards) == 1, 45)
                await asyncio.to_thread(model.wait_for_requests, 2, 45)
                await eventually(
                    functools.partial(asyncio.to_thread, _placeholder_recorded, state), within=30
                )
            finally:
                first.send_signal(signal.SIGKILL)
                await asyncio.to_thread(first.wait, 30)
        [card] = fake.cards.values()
        assert not card.finalized  # what kill -9 left behind
        model.script(Reply(text="the one answer"))
        with (tmp_path / "run2.log").open("w") as log:
            second = _start(config, state, log)
            try:
                await fake.await_until(
                    lambda: any("the one answer" in c.content.get("content", "")
                                for c in fake.cards.values())
                    or any("the one answer" in t for t in texts(fake, ALICE)),
                    45,
                )  # fmt: skip
                await fake.await_until(lambda: all(c.finalized for c in fake.cards.values()), 45)
            finally:
                second.send_signal(signal.SIGTERM)
                code = await asyncio.to_thread(second.wait, 30)
        cards = dict(fake.cards)
        shown = [*texts(fake, ALICE), *(c.content.get("content", "") for c in cards.values())]
    assert first.returncode == -signal.SIGKILL
    assert code == 0, (tmp_path / "run2.log").read_text()
    assert sum("the one answer" in text for text in shown) == 1, shown
    assert not any("never arrives" in text for text in shown), shown
    assert any(RESUMING_NOTICE in text for text in shown), shown
    assert cards[next(iter(cards))].content.get("content", "") == INTERRUPTED_PLACEHOLDER
    assert all(c.flow_status == "3" for c in cards.values())
    assert fake.protocol_errors == []
