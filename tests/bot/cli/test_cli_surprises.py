"""A command line without surprises: a closed pipe ends quietly,
``--version``, a subcommand's own usage on its errors, one ``--run-agent PROMPT`` form."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from bot.cli import main

REPO = Path(__file__).resolve().parents[3]


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SWITCHBOARD_"))}


def _into_a_closed_pipe(*args: str) -> subprocess.CompletedProcess[bytes]:
    """Run ``switchboard ARGS`` with stdout a pipe nobody reads any more (``| head`` done)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(  # noqa: S603 - our own CLI
            [sys.executable, "-m", "bot", *args],
            stdout=write_end, stderr=subprocess.PIPE, env=_env(), cwd=REPO, timeout=60,
            check=False,
        )  # fmt: skip
    finally:
        os.close(write_end)


def _run(*args: str | Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main([str(arg) for arg in args])
        except SystemExit as exit_:
            status = int(exit_.code or 0)
    return status, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("args", [("--help",), ("check", "-c", "config/switchboard.example.yaml")])
def test_a_closed_pipe_ends_quietly(args: tuple[str, ...]) -> None:
    result = _into_a_closed_pipe(*args)
    assert result.stderr == b""
    assert result.returncode in (0, 141)


def test_version_prints_the_distributions_version() -> None:
    status, out, _ = _run("--version")
    assert status == 0
    assert out.strip() == f"switchboard {version('switchboard')}"


def test_an_extra_argument_prints_the_subcommands_usage(config: Path) -> None:
    status, _, err = _run(
        "schedule", "add", "-c", config, "--channel", "telegram", "--chat", "42",
        "--at", "2030-01-01T09:00", "--text", "hi", "hello",
    )  # fmt: skip
    assert status == 2
    assert err.startswith("usage: switchboard schedule add ")
    assert "unrecognized arguments: hello" in err


def test_send_takes_the_prompt_as_the_value_of_run_agent(config: Path) -> None:
    status, out, err = _run(
        "send", "-c", config, "--channel", "telegram", "--chat", "42", "--chat-type", "dm",
        "--run-agent", "summarise the night",
    )  # fmt: skip
    assert status == 0, err
    assert "the daemon runs the prompt" in out
    usage = _run("send", "--help")[1]
    assert "--run-agent [PROMPT]" in usage


def test_the_old_send_form_still_works(config: Path) -> None:
    status, out, err = _run(
        "send", "-c", config, "--channel", "telegram", "--chat", "42", "--chat-type", "dm",
        "summarise the night", "--run-agent",
    )  # fmt: skip
    assert status == 0, err
    assert "the daemon runs the prompt" in out


def test_run_agent_with_text_too_is_refused_with_the_form_to_use(config: Path) -> None:
    status, _, err = _run(
        "send", "-c", config, "--channel", "telegram", "--chat", "42", "--chat-type", "dm",
        "--run-agent", "a prompt", "some text",
    )  # fmt: skip
    assert status == 1
    assert "--run-agent PROMPT" in err
