"""``switchboard schedule list|add|cancel``, ``trace schedule-ID`` and the schedules line of
``status`` against a SQLite store (design §19 "Schedules")."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main


def _run(*args: str | Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([str(arg) for arg in args])
    return status, out.getvalue(), err.getvalue()


def _json(*args: str | Path) -> Any:
    status, out, err = _run(*args, "--json")
    assert status == 0, err
    return json.loads(out)


def test_add_list_trace_and_cancel_a_schedule(config: Path) -> None:
    made = _json(
        "schedule", "add", "-c", config, "--channel", "telegram", "--chat", "42",
        "--chat-type", "group", "--topic", "7", "--cron", "0 9 * * 1", "--tz", "Europe/Berlin",
        "--text", "weekly summary",
    )  # fmt: skip
    assert (made["id"], made["cron"], made["topic"], made["state"]) == (
        1,
        "0 9 * * 1",
        "7",
        "active",
    )
    assert made["next_fire_at"].endswith(":00+00:00")
    (listed,) = _json("schedule", "list", "-c", config)
    assert listed["id"] == 1
    assert listed["text_length"] == len("weekly summary")
    status, out, _ = _run("schedule", "list", "-c", config)
    assert status == 0
    assert "telegram 42 topic=7" in out
    assert "weekly summary" not in out  # texts are not printed, only their length
    traced = _json("trace", "schedule-1", "-c", config)
    assert traced["firings"] == []
    status, out, _ = _run("status", "-c", config, "--json")  # 1: no daemon answers
    facts = json.loads(out)["store"]
    assert (facts["schedules"]["active"], facts["pushes_pending"]) == (1, 0)
    status, out, _ = _run("schedule", "cancel", "1", "-c", config)
    assert (status, out.strip()) == (0, "schedule 1 cancelled")
    status, _, err = _run("schedule", "cancel", "1", "-c", config)
    assert status == 1
    assert "cancelled already" in err
    assert _json("schedule", "list", "-c", config) == []
    assert [s["state"] for s in _json("schedule", "list", "--all", "-c", config)] == ["cancelled"]
    actions = [entry["action"] for entry in _json("audit", "-c", config)]
    assert actions[:2] == ["schedule cancel", "schedule add"]


@pytest.mark.parametrize(
    ("when", "problem"),
    [
        (("--cron", "0 9 * *"), "not a cron expression"),
        (("--at", "2020-01-01T09:00"), "in the past"),
        (("--at", "tomorrow"), "not an ISO-8601 time"),
        (("--cron", "0 9 * * *", "--tz", "Mars/Base"), "unknown time zone"),
    ],
)
def test_bad_input_is_refused_with_the_reason(
    config: Path, when: tuple[str, ...], problem: str
) -> None:
    status, _, err = _run(
        "schedule", "add", "-c", config, "--channel", "telegram", "--chat", "42",
        "--chat-type", "dm", *when, "--text", "x",
    )  # fmt: skip
    assert status == 1
    assert problem in err


def test_a_channel_that_is_not_enabled_and_an_unknown_chat_are_refused(config: Path) -> None:
    status, _, err = _run(
        "schedule", "add", "-c", config, "--channel", "slack", "--chat", "C1",
        "--cron", "0 9 * * *", "--text", "x",
    )  # fmt: skip
    assert (status, "not enabled" in err) == (1, True)
    status, _, err = _run(
        "schedule", "add", "-c", config, "--channel", "telegram", "--chat", "C1",
        "--cron", "0 9 * * *", "--text", "x",
    )  # fmt: skip
    assert (status, "--chat-type" in err) == (1, True)
