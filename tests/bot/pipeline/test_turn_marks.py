"""Reading and writing the journal's turn marks (design §11)."""

from __future__ import annotations

import pytest

from bot.pipeline.turn_marks import TurnMark


@pytest.mark.parametrize(
    ("reason", "mark"),
    [
        ("waiting turn c1", TurnMark(turn="c1", agent_started=False)),
        ("turn c1", TurnMark(turn="c1", agent_started=True)),
        ("waiting turn c1 interrupted=2", TurnMark(turn="c1", agent_started=False, interrupted=2)),
        ("turn c1 interrupted=1", TurnMark(turn="c1", agent_started=True, interrupted=1)),
        # Written by earlier releases for their one re-run: an agent run interrupted once.
        ("resumed turn c1", TurnMark(turn="c1", agent_started=True, interrupted=1)),
    ],
)
def test_a_mark_reads_back_as_written(reason: str, mark: TurnMark) -> None:
    assert TurnMark.parse(reason) == mark
    if not reason.startswith("resumed "):
        assert mark.encode() == reason


@pytest.mark.parametrize("reason", [None, "", "asked", "command /new", "turn", "turn a b"])
def test_other_reasons_are_no_mark(reason: str | None) -> None:
    assert TurnMark.parse(reason) is None


def test_only_a_crash_in_the_agent_run_counts() -> None:
    waiting = TurnMark(turn="c1", agent_started=False, interrupted=1)
    running = TurnMark(turn="c1", agent_started=True, interrupted=1)
    assert waiting.after_crash() == waiting
    assert running.after_crash() == TurnMark(turn="c1", agent_started=False, interrupted=2)
