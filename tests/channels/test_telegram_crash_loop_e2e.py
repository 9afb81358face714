"""``switchboard run`` killed with -9 again and again during one message's turn, against the
fake Telegram and the fake model (design §11, §15): a message whose agent run keeps being
killed is given up with the apology after the fourth such crash and never run again; one
killed three times in its model call (a storm of restarts) is still answered, exactly once."""

from __future__ import annotations

import asyncio
import signal
import subprocess
from pathlib import Path

from tests.channels.cli_support import cli_config, cli_env, start_run
from tests.channels.telegram_support import texts, wait_text
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.fakes.telegram_api import FakeTelegram

APOLOGY = "could not be answered after a restart"
HELD = Reply(text="an answer that never arrives", delay_s=60)
"""A model call the test kills the daemon in."""
WITHIN_S = 60.0


class Runs:
    """Starts of ``switchboard run`` on one state dir, each logged to its own file."""

    def __init__(self, tmp_path: Path, fake: FakeTelegram, model: FakeOpenAIServer) -> None:
        self.tmp_path, self.state_dir = tmp_path, tmp_path / "state"
        agent = f"{{model: {{base_url: '{model.base_url}', api_key: sk-test}}}}"
        telegram = f"enabled: true, token: '{fake.token}', api_base_url: '{fake.api_origin}'"
        channel = f"  telegram: {{{telegram}}}\n"
        self.config = cli_config(tmp_path, agent, channel)
        self.count = 0

    def start(self) -> subprocess.Popen[str]:
        self.count += 1
        with (self.tmp_path / f"run{self.count}.log").open("w") as log:
            return start_run(self.config, log, cli_env(self.state_dir))

    def log(self) -> str:
        return (self.tmp_path / f"run{self.count}.log").read_text()


async def _kill_at_model_call(runs: Runs, model: FakeOpenAIServer, calls: int) -> None:
    """Start the daemon, and kill -9 it once the model has received its ``calls``-th request."""
    process = runs.start()
    try:
        await asyncio.to_thread(model.wait_for_requests, calls, WITHIN_S)
    finally:
        process.send_signal(signal.SIGKILL)
        await asyncio.to_thread(process.wait, 30)
    assert process.returncode == -signal.SIGKILL, runs.log()


async def _stop(process: subprocess.Popen[str]) -> int:
    process.send_signal(signal.SIGTERM)
    return await asyncio.to_thread(process.wait, 30)


async def test_a_message_that_kills_the_daemon_every_time_is_given_up_after_four(
    tmp_path: Path,
) -> None:
    with FakeOpenAIServer() as model, FakeTelegram() as fake:
        model.script(*[HELD] * 5)
        runs = Runs(tmp_path, fake, model)
        fake.push_message("the poison message")
        for calls in (1, 2, 3, 4):
            await _kill_at_model_call(runs, model, calls)
        last = runs.start()
        try:
            await wait_text(fake, 42, APOLOGY, within=WITHIN_S)
        finally:
            code = await _stop(last)
        shown, requests = texts(fake, 42), model.requests
    assert code == 0, runs.log()
    assert len(requests) == 4  # no fifth run
    assert sum(APOLOGY in text for text in shown) == 1, shown
    assert not any("never arrives" in text for text in shown)
    assert not any(text.endswith("▍") for text in shown)  # no placeholder left "thinking"


async def test_a_turn_killed_three_times_in_its_model_call_is_answered_exactly_once(
    tmp_path: Path,
) -> None:
    with FakeOpenAIServer() as model, FakeTelegram() as fake:
        model.script(HELD, HELD, HELD, Reply(text="the one answer"))
        runs = Runs(tmp_path, fake, model)
        fake.push_message("please answer once")
        for calls in (1, 2, 3):
            await _kill_at_model_call(runs, model, calls)
        last = runs.start()
        try:
            await wait_text(fake, 42, "the one answer", within=WITHIN_S)
        finally:
            code = await _stop(last)
        shown = texts(fake, 42)
    assert code == 0, runs.log()
    assert sum("the one answer" in text for text in shown) == 1, shown
    assert not any(APOLOGY in text for text in shown), shown
    assert not any("never arrives" in text for text in shown)
    assert not any(text.endswith("▍") for text in shown)
