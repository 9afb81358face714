"""``switchboard run`` killed with -9 around an approval (design §11, §24), against the fake
Telegram and the fake model, with the embedded agent and ``write_file`` waiting for a decision:
a request waiting through a kill -9 is decided after the restart and the tool runs exactly once;
a decision (a press, or a typed command) whose resumed run was cut off by a kill -9 after the
tool ran answers once after the restart and does not run the tool again."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

from tests.channels.cli_support import cli_env, start_run
from tests.channels.telegram_support import texts, wait_text
from tests.e2e_approvals.support import (
    gated_agent,
    model_requests,
    press_on_telegram,
    telegram_request,
    tool_results,
    write,
    written,
)
from tests.fakes.openai_server import FakeOpenAIServer, Hang, Reply
from tests.fakes.telegram_api import FakeTelegram

CHAT, OTHER = 42, 43
"""Two private chats (each user's own), so two conversations run side by side."""
START_S = 45.0
"""Bound for a cold start of ``python -m bot`` on a busy machine (never waited out)."""


def _config(tmp_path: Path, fake: FakeTelegram, model: FakeOpenAIServer) -> Path:
    data = {
        "config_version": 1,
        "state_dir": str(tmp_path / "state"),
        "http": {"enabled": False},
        "access": {"dm_policy": "open"},
        "agent": gated_agent(model),
        "daemon": {"shutdown_grace_s": 5},
        "channels": {
            "telegram": {"enabled": True, "token": fake.token, "api_base_url": fake.api_origin}
        },
    }
    path = tmp_path / "switchboard.yaml"
    path.write_text(json.dumps(data))  # JSON is YAML
    return path


class Daemon:
    """``switchboard run`` in the background, its output in ``<name>.log``."""

    def __init__(self, config: Path, name: str) -> None:
        self.log = config.parent / f"{name}.log"
        self._config = config
        self.process: subprocess.Popen[str] | None = None
        self.exit_code: int | None = None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        state = self._config.parent / "state"
        with self.log.open("w") as log:
            self.process = start_run(self._config, log, {**cli_env(state), "PYTHONUNBUFFERED": "1"})
            try:
                yield
            finally:
                if self.process.poll() is None:
                    self.process.send_signal(signal.SIGTERM)
                self.exit_code = await asyncio.to_thread(self.process.wait, 30)

    async def kill9(self) -> int:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        return await asyncio.to_thread(self.process.wait, 30)


def _press(fake: FakeTelegram, chat_id: int, needle: str) -> None:
    press_on_telegram(fake, chat_id, telegram_request(fake, chat_id, needle), "approve")


async def test_a_request_waits_through_kill_9_and_the_tool_runs_once(tmp_path: Path) -> None:
    with FakeOpenAIServer() as model, FakeTelegram() as fake:
        config = _config(tmp_path, fake, model)
        root = tmp_path / "state"
        model.script(Reply(tool_calls=(write("a.txt", "alpha", "call_a"),)))
        first = Daemon(config, "run1")
        async with first.running():
            fake.push_message("please write a.txt")
            await wait_text(fake, CHAT, "Approval needed", within=START_S)
            killed = await first.kill9()
        assert written(root, "a.txt") == []

        model.script(Reply(text="Saved a.txt after the restart."))
        second = Daemon(config, "run2")
        async with second.running():
            _press(fake, CHAT, "a.txt")
            await wait_text(fake, CHAT, "Saved a.txt after the restart.", within=START_S)
            resumed = (await model_requests(model, 2))[1]
        shown = texts(fake, CHAT)
    assert killed == -signal.SIGKILL
    assert second.exit_code == 0, second.log.read_text()
    assert written(root, "a.txt") == ["alpha"]
    assert list(tool_results(resumed)) == ["call_a"]
    assert "Wrote outputs/a.txt" in tool_results(resumed)["call_a"]
    assert len(model.requests) == 2
    assert sum("Saved a.txt after the restart." in text for text in shown) == 1, shown


async def test_runs_cut_off_by_kill_9_after_the_decision_answer_once_without_rerunning_the_tool(
    tmp_path: Path,
) -> None:
    """Approved by a press in one chat and by a typed ``/approve ID`` in another; both tools
    ran and the model hangs when the daemon is killed. After the restart each chat gets its
    answer (the fake model echoes the user's message) once, and neither tool runs again."""
    with FakeOpenAIServer() as model, FakeTelegram() as fake:
        config = _config(tmp_path, fake, model)
        root = tmp_path / "state"
        first = Daemon(config, "run1")
        async with first.running():
            for chat, name in ((CHAT, "b.txt"), (OTHER, "c.txt")):
                model.script(Reply(tool_calls=(write(name, name, f"call_{name}"),)))
                fake.push_message(f"{name} please", chat_id=chat, user_id=chat)
                await wait_text(fake, chat, name, within=START_S)
            model.script(Hang(), Hang())
            _press(fake, CHAT, "b.txt")
            fake.push_message(
                f"/approve {telegram_request(fake, OTHER, 'c.txt').id}",
                chat_id=OTHER,
                user_id=OTHER,
            )
            await model_requests(model, 4)  # both tools ran; the model hangs on both
            killed = await first.kill9()
        assert (written(root, "b.txt"), written(root, "c.txt")) == (["b.txt"], ["c.txt"])
        for path in root.glob("threads/*/outputs/*.txt"):
            path.write_text("changed since")

        second = Daemon(config, "run2")
        async with second.running():
            await wait_text(fake, CHAT, "b.txt please", within=START_S)
            await wait_text(fake, OTHER, "c.txt please", within=START_S)
        shown = {chat: texts(fake, chat) for chat in (CHAT, OTHER)}
    assert killed == -signal.SIGKILL
    assert second.exit_code == 0, second.log.read_text()
    assert (written(root, "b.txt"), written(root, "c.txt")) == (
        ["changed since"],
        ["changed since"],
    )
    assert [text for text in shown[CHAT] if text == "b.txt please"] == ["b.txt please"], shown
    assert [text for text in shown[OTHER] if text == "c.txt please"] == ["c.txt please"], shown
    assert len(model.requests) == 6, model.requests
