"""Decisions made outside chat reach the paused run (design §24): ``switchboard approvals`` beside
the running daemon and the console's action record the decision, and the daemon's sweep edits
the request and resumes the run once; a run with another request still pending waits for it."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from bot.approvals.operator import decide_as_operator
from bot.messages import OutboundText, TextEdit
from bot.ports.agent import Decision
from tests.bot.approvals.test_approvals_in_chat import TWO, WRITE
from tests.bot.cli.cli_support import run_cli
from tests.bot.harness import make_settings, running
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import FakeChannel, Sent, dm

SWEPT = 10.0
"""Seconds to wait for the sweep (every 2 s) on a busy machine."""


def _approval_id(sent: Sent) -> str:
    assert isinstance(sent.delivery, OutboundText)
    found = re.search(r"ID `([0-9a-f]+)`", sent.delivery.text)
    assert found is not None, sent.delivery.text
    return found.group(1)


async def test_the_command_line_approves_and_the_daemon_resumes_the_run(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    config = tmp_path / "operator.yaml"
    config.write_text(f"config_version: 1\nstate_dir: {tmp_path}\nhttp: {{enabled: false}}\n")
    channel, agent = FakeChannel(), FakeAgent()
    async with running(settings, [channel], agent):
        await channel.inject(dm(WRITE, message_id="1"))
        approval_id = _approval_id(await channel.wait_text("Approval needed"))
        done = await asyncio.to_thread(run_cli, "approvals", "approve", approval_id, "-c", config)
        assert done.status == 0, done.err
        assert "the daemon resumes its run" in done.out
        await channel.wait_text("decided: approve", within=SWEPT)
        edited = await channel.wait_for(
            lambda s: isinstance(s.delivery, TextEdit) and "Approved" in s.text, within=SWEPT
        )
        assert "by " in edited.text
        assert approval_id in edited.text
    resumed = [run for run in agent.runs if run.turn.resume_decisions is not None]
    assert len(resumed) == 1


async def test_a_console_decision_leaves_the_run_to_its_last_request_decided_in_chat(
    tmp_path: Path,
) -> None:
    settings = make_settings(tmp_path)
    channel, agent = FakeChannel(), FakeAgent()
    async with running(settings, [channel], agent) as daemon:
        await channel.inject(dm(TWO, message_id="1"))
        first = _approval_id(await channel.wait_text("(1 of 2)"))
        second = _approval_id(await channel.wait_text("(2 of 2)"))
        said = await decide_as_operator(
            lambda: settings,
            daemon.kernel.store,
            first,
            Decision(type="reject", message="not today"),
            "console:ann",
        )
        assert said.endswith("its run waits for 1 more decision(s)")
        await channel.inject(dm(f"/approve {second}", message_id="2"))
        resumed = await channel.wait_text("decided: ", within=SWEPT)
    assert resumed.text.endswith("decided: reject(not today), approve")
    assert len([run for run in agent.runs if run.turn.resume_decisions is not None]) == 1
