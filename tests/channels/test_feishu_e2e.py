"""``switchboard`` as a user runs it with Feishu enabled against FakeFeishu: ``check --online``
probes the app credentials and bot info, ``run`` answers over the long connection and drains
on SIGTERM, and kill -9 in the middle of a turn still gives exactly one answer with no card
left streaming (design §11), also when Feishu took the placeholder card but the daemon died
before it heard so. The fakes run on their own threads in this process; the daemon is a
child."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import signal
import sqlite3
import subprocess
from pathlib import Path
from typing import IO

from bot.pipeline.recovery import INTERRUPTED_PLACEHOLDER, PLACEHOLDER_TAG, RESUMING_NOTICE
from tests.channels.cli_support import check_online, cli_config, cli_env, daemon_process, start_run
from tests.channels.feishu_support import DM, shown_text, texts, wait_text
from tests.fakes.common.waiting import eventually
from tests.fakes.feishu import Message
from tests.fakes.feishu_api import FakeFeishu
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall


def _config(tmp_path: Path, fake: FakeFeishu, agent: str = "{backend: echo}") -> Path:
    return cli_config(
        tmp_path,
        agent,
        "  feishu:\n"
        "    enabled: true\n"
        f"    app_id: {fake.app_id}\n"
        f"    app_secret: {fake.app_secret}\n"
        f"    domain: {fake.origin}\n",
    )


def test_check_online_probes_feishu(tmp_path: Path) -> None:
    with FakeFeishu() as fake:
        config = _config(tmp_path, fake)
        good = check_online(config, tmp_path / "state")
        fake.refuse_credentials = True
        bad = check_online(config, tmp_path / "state")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "channel feishu  ok" in good.stdout
    assert fake.bot_open_id in good.stdout
    assert bad.returncode == 1
    assert "channel feishu  FAIL" in bad.stdout
    assert "10014" in bad.stdout
    assert fake.app_secret not in good.stdout + good.stderr + bad.stdout + bad.stderr


async def test_run_answers_over_the_long_connection_and_drains(tmp_path: Path) -> None:
    with FakeFeishu() as fake:
        config = _config(tmp_path, fake)
        with daemon_process(config, tmp_path / "state") as process:
            fake.push_message("hello from feishu", chat_id=DM)
            await wait_text(fake, DM, "hello from feishu", within=45)
            process.send_signal(signal.SIGTERM)
            _, err = await asyncio.to_thread(process.communicate, timeout=30)
        assert process.returncode == 0, err
        assert "channel feishu: starting -> running" in err
        assert "hello from feishu" not in err  # message text is never logged at INFO
        assert "ticket=" not in err
        await fake.await_until(lambda: fake.live_connections() == 0)


def _start(config: Path, state_dir: Path, log: IO[str]) -> subprocess.Popen[str]:
    return start_run(config, log, {**cli_env(state_dir), "PYTHONUNBUFFERED": "1"})


def _streaming(fake: FakeFeishu, message: Message) -> bool:
    """Whether the message still shows a CardKit card in streaming mode."""
    if message.card_id is None or message.content.get("type") != "card":
        return False
    return fake.card(message.card_id).streaming_mode


def _is_card_send(content: object) -> bool:
    return isinstance(content, str) and '"card_id"' in content


def _placeholder_recorded(state_dir: Path) -> bool:
    """Whether the daemon recorded its placeholder as sent. Feishu answering the send is not
    enough: a kill -9 before the daemon records the answer leaves a message it cannot know."""
    uri = f"file:{state_dir / 'switchboard.db'}?mode=ro"
    with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=5)) as db:
        rows = db.execute(
            "SELECT state FROM outbox WHERE idempotency_key LIKE ?", (f"%{PLACEHOLDER_TAG}%",)
        ).fetchall()
    return [state for (state,) in rows] == ["sent"]


async def test_kill_9_mid_turn_answers_once_and_leaves_no_card_streaming(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    with FakeOpenAIServer() as model, FakeFeishu() as fake:
        agent = f"{{model: {{base_url: '{model.base_url}', api_key: sk-test}}}}"
        config = _config(tmp_path, fake, agent)
        # Some text (so a streaming card shows it), a tool call, then a model that is slow.
        look = ToolCall(name="list_files", arguments={})
        model.script(
            Reply(text="Let me look at your files.", tool_calls=(look,)),
            Reply(text="an answer that never arrives", delay_s=60),
        )
        with (tmp_path / "run1.log").open("w") as log:
            first = _start(config, state, log)
            try:
                asked = fake.push_message("please answer once", chat_id=DM)
                await fake.await_call(
                    "im.message.reply", lambda c: _is_card_send(c.json["content"]), within=45
                )
                await asyncio.to_thread(model.wait_for_requests, 2, 45)
                await eventually(
                    functools.partial(asyncio.to_thread, _placeholder_recorded, state), within=30
                )
            finally:
                first.send_signal(signal.SIGKILL)
                await asyncio.to_thread(first.wait, 30)
        [placeholder] = fake.sent_messages(DM)
        assert placeholder.card_id is not None
        assert _streaming(fake, placeholder)  # what kill -9 left behind
        model.script(Reply(text="the one answer"))
        with (tmp_path / "run2.log").open("w") as log:
            second = _start(config, state, log)
            try:
                await wait_text(fake, DM, "the one answer", within=45)
                await wait_text(fake, DM, INTERRUPTED_PLACEHOLDER, within=45)
            finally:
                second.send_signal(signal.SIGTERM)
                code = await asyncio.to_thread(second.wait, 30)
        shown = texts(fake, DM)
        messages = fake.sent_messages(DM)
        old = fake.message(placeholder.message_id)
    assert first.returncode == -signal.SIGKILL
    assert code == 0, (tmp_path / "run2.log").read_text()
    assert sum("the one answer" in text for text in shown) == 1, shown
    assert sorted(shown) == sorted([INTERRUPTED_PLACEHOLDER, RESUMING_NOTICE, "the one answer"])
    assert not any("never arrives" in text for text in shown), shown
    assert not any(text.rstrip().endswith("▍") for text in shown), shown
    assert not any(_streaming(fake, m) for m in messages), shown
    # The killed process's card now says the turn was interrupted (a static card PATCHed
    # over it: this process holds no CardKit stream for it).
    assert old is not None
    assert old.updated
    assert shown_text(fake, old) == INTERRUPTED_PLACEHOLDER
    assert all(m.parent_id == asked for m in messages if "the one answer" in shown_text(fake, m))


def _placeholder_states(state_dir: Path) -> list[str]:
    uri = f"file:{state_dir / 'switchboard.db'}?mode=ro"
    with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=5)) as db:
        rows = db.execute(
            "SELECT state FROM outbox WHERE idempotency_key LIKE ?", (f"%{PLACEHOLDER_TAG}%",)
        ).fetchall()
    return [state for (state,) in rows]


def _card_reply(body: object) -> bool:
    return isinstance(body, dict) and _is_card_send(body.get("content"))


async def test_kill_9_after_feishu_took_the_placeholder_unrecorded_leaves_no_card_streaming(
    tmp_path: Path,
) -> None:
    """Feishu took the placeholder card, but the daemon died before it heard so: the row is
    still pending. The next start resends it under its uuid, which names the card Feishu took
    (nothing new is posted), and edits it; the re-run answers once, below it (design §11)."""
    state = tmp_path / "state"
    with FakeOpenAIServer() as model, FakeFeishu() as fake:
        agent = f"{{model: {{base_url: '{model.base_url}', api_key: sk-test}}}}"
        config = _config(tmp_path, fake, agent)
        look = ToolCall(name="list_files", arguments={})
        model.script(
            Reply(text="Let me look at your files.", tool_calls=(look,)),
            Reply(text="an answer that never arrives", delay_s=60),
        )
        fake.withhold_answer("im.message.reply", when=_card_reply)  # taken, never answered
        with (tmp_path / "run1.log").open("w") as log:
            first = _start(config, state, log)
            try:
                asked = fake.push_message("please answer once", chat_id=DM)
                taken = await fake.await_call(
                    "im.message.reply", lambda c: _card_reply(c.json), within=45
                )
                await asyncio.to_thread(model.wait_for_requests, 2, 45)
            finally:
                first.send_signal(signal.SIGKILL)
                await asyncio.to_thread(first.wait, 30)
        [placeholder] = fake.sent_messages(DM)
        assert _streaming(fake, placeholder)  # what kill -9 left behind
        assert _placeholder_states(state) == ["pending"]  # and the daemon never learnt of it
        model.script(Reply(text="the one answer"))
        with (tmp_path / "run2.log").open("w") as log:
            second = _start(config, state, log)
            try:
                await wait_text(fake, DM, "the one answer", within=45)
                await wait_text(fake, DM, INTERRUPTED_PLACEHOLDER, within=45)
            finally:
                second.send_signal(signal.SIGTERM)
                code = await asyncio.to_thread(second.wait, 30)
        shown = texts(fake, DM)
        messages = fake.sent_messages(DM)
        old = fake.message(placeholder.message_id)
        resent = [c for c in fake.calls("im.message.reply") if c.at > taken.at]
    assert first.returncode == -signal.SIGKILL
    assert code == 0, (tmp_path / "run2.log").read_text()
    assert set(_placeholder_states(state)) == {"sent"}  # the left one, and the re-run's own
    assert sum("the one answer" in text for text in shown) == 1, shown
    assert sorted(shown) == sorted([INTERRUPTED_PLACEHOLDER, RESUMING_NOTICE, "the one answer"])
    assert not any(_streaming(fake, m) for m in messages), shown
    assert old is not None
    assert old.updated
    assert shown_text(fake, old) == INTERRUPTED_PLACEHOLDER
    assert messages[0].message_id == placeholder.message_id  # the answer comes below it
    assert taken.json["uuid"] in [c.json.get("uuid") for c in resent]  # found by its uuid
    assert all(m.parent_id == asked for m in messages if "the one answer" in shown_text(fake, m))
