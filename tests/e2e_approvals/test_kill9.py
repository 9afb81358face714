"""``switchboard run`` killed with -9 around approvals (design §11, §24), against the fake
Telegram and the fake model, with the embedded agent and ``write_file`` waiting for a decision:
a request waiting through a kill -9 is decided after the restart and the tool runs exactly once;
a decision (a press, or a typed command) whose resumed run was cut off by a kill -9 after the
tool ran answers once after the restart and does not run the tool again. One conversation
through three starts, since a cold start is most of the cost."""

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
from tests.fakes.common.waiting import eventually
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

    async def turns_ended(self, outcome: str, count: int) -> None:
        """Until ``count`` turns ended with ``outcome`` (their messages marked in the journal:
        the daemon logs a turn's end after that)."""
        await eventually(
            lambda: self.log.read_text().count(f"outcome={outcome} ") >= count, START_S
        )

    async def kill9(self) -> int:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        return await asyncio.to_thread(self.process.wait, 30)


def _press(fake: FakeTelegram, chat_id: int, needle: str) -> None:
    press_on_telegram(fake, chat_id, telegram_request(fake, chat_id, needle), "approve")


async def _cut_off_two_runs(fake: FakeTelegram, model: FakeOpenAIServer) -> None:
    """Requests in both chats, approved by a press in one and a typed ``/approve ID`` in the
    other; returns once both tools ran and the model hangs on both resumed runs."""
    for chat, name in ((CHAT, "b.txt"), (OTHER, "c.txt")):
        model.script(Reply(tool_calls=(write(name, name, f"call_{name}"),)))
        fake.push_message(f"{name} please", chat_id=chat, user_id=chat)
        await wait_text(fake, chat, name, within=START_S)
    model.script(Hang(), Hang())
    _press(fake, CHAT, "b.txt")
    typed = f"/approve {telegram_request(fake, OTHER, 'c.txt').id}"
    fake.push_message(typed, chat_id=OTHER, user_id=OTHER)
    await model_requests(model, 6)


async def test_approvals_through_two_kill_9s_run_each_tool_once(tmp_path: Path) -> None:
    """A request waits through a kill -9 and the press after the restart runs the tool once.
    Then a press in one chat and a typed ``/approve ID`` in another resume runs whose tools ran
    when a kill -9 cuts them off (the model hangs): after the restart each chat gets its answer
    once (the fake model echoes the user's message) and neither tool runs again."""
    with FakeOpenAIServer() as model, FakeTelegram() as fake:
        config, root = _config(tmp_path, fake, model), tmp_path / "state"
        runs = [Daemon(config, f"run{n}") for n in (1, 2, 3)]
        model.script(Reply(tool_calls=(write("a.txt", "alpha", "call_a"),)))
        async with runs[0].running():
            fake.push_message("please write a.txt")
            await wait_text(fake, CHAT, "Approval needed", within=START_S)
            await runs[0].turns_ended("approval", 1)  # its message handled: nothing to re-run
            kills = [await runs[0].kill9()]
        assert written(root, "a.txt") == []

        model.script(Reply(text="Saved a.txt after the restart."))
        async with runs[1].running():
            _press(fake, CHAT, "a.txt")
            await wait_text(fake, CHAT, "Saved a.txt after the restart.", within=START_S)
            await _cut_off_two_runs(fake, model)
            kills.append(await runs[1].kill9())
        assert (written(root, "b.txt"), written(root, "c.txt")) == (["b.txt"], ["c.txt"])
        for name in ("b.txt", "c.txt"):
            next(root.glob(f"threads/*/outputs/{name}")).write_text("changed since")

        async with runs[2].running():  # nothing scripted: the model echoes
            await wait_text(fake, CHAT, "b.txt please", within=START_S)
            await wait_text(fake, OTHER, "c.txt please", within=START_S)
        shown = {chat: texts(fake, chat) for chat in (CHAT, OTHER)}
    assert kills == [-signal.SIGKILL, -signal.SIGKILL]
    assert runs[2].exit_code == 0, runs[2].log.read_text()
    assert written(root, "a.txt") == ["alpha"]
    assert "Wrote outputs/a.txt" in tool_results(model.requests[1])["call_a"]
    assert written(root, "b.txt") == written(root, "c.txt") == ["changed since"]
    assert sum("Saved a.txt after the restart." in text for text in shown[CHAT]) == 1, shown
    assert [text for text in shown[CHAT] if text == "b.txt please"] == ["b.txt please"], shown
    assert [text for text in shown[OTHER] if text == "c.txt please"] == ["c.txt please"], shown
    assert len(model.requests) == 8, model.requests
