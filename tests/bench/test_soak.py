"""The fault-injection soak (``bench/soak.py``), short: real ``python -m bot run`` daemons.

Three phases run at once, each with its own daemon, fakes and state dir: one ``kill -9`` with
turns in flight, a 429/5xx storm on sends, and every message delivered three times. Each must
answer every message exactly once, in order. Seeded; every wait has a deadline.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.soak import Options, run_soak
from bench.soak_score import score
from bot.pipeline.recovery import GAVE_UP_NOTICE, RESUMING_NOTICE


def test_short_soak_loses_duplicates_and_reorders_nothing(tmp_path: Path) -> None:
    options = Options.short(seed=7, phases=("kill9", "storm", "redeliver"))
    result = run_soak(options, tmp_path, parallel=True)
    phases = result["phases"]
    report = json.dumps(phases, indent=1)
    assert set(phases) == {"kill9", "storm", "redeliver"}, report
    for name, phase in phases.items():
        assert "error" not in phase, f"{name}: {phase.get('error')}"
        assert phase["sent"] == 9, f"{name} sent {phase['sent']}\n{report}"
        assert (phase["lost"], phase["duplicated"], phase["reordered"]) == (0, 0, 0), (
            f"{name}: lost/duplicated/reordered\n{report}"
        )
        assert phase["answered"] == 9, report
        assert all(phase["checks"].values()), f"{name}: {phase['checks']}\n{report}"
    assert phases["kill9"]["restarts"] == 1
    assert phases["kill9"]["exit_codes"] == [-9, 0]
    assert phases["redeliver"]["deliveries"] == {"pushed": 9, "new_update_id": 9, "redelivered": 9}
    assert phases["redeliver"]["model_requests"] <= 9, "a redelivered message ran again"
    assert result["ok"], report


def _bot(message_id: int, text: str, reply_to: int | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"message_id": message_id, "text": text}
    if reply_to is not None:
        message["reply_to_message"] = {"message_id": reply_to}
    return message


def test_scoring_tells_lost_duplicated_reordered_and_strays_apart() -> None:
    sent = {7: [1, 2, 3, 4], 8: [1, 2]}
    chats = {
        7: [
            _bot(1010, "answer to q7-2. end-of-answer"),
            _bot(1011, "answer to q7-1. end-of-answer"),  # after q7-2: reordered
            _bot(1012, "answer to q7-1. end-of-answer"),  # a second answer: duplicated
            _bot(1013, GAVE_UP_NOTICE, reply_to=1003),  # q7-3 given up, with the apology
            _bot(1014, "answer t ▍"),  # a placeholder left behind
        ],
        8: [
            _bot(1005, "answer to q8-1, q8-2. end-of-answer"),  # one merged turn
            _bot(1006, "answer to q8-1, q8-2. end-of-answer"),  # resent after a 5xx
            _bot(1007, RESUMING_NOTICE),
        ],
    }
    ids = {(7, 1): 1001, (7, 2): 1002, (7, 3): 1003, (7, 4): 1004, (8, 1): 1001, (8, 2): 1002}
    result = score(sent, chats, frozenset({(8, 1005)}), ids)
    assert (result.sent, result.answered) == (6, 4)
    assert result.lost == ["q7-3", "q7-4"]
    assert result.lost_with_apology == ["q7-3"]
    assert result.duplicated == {"q7-1": [1011, 1012]}
    assert set(result.duplicated_after_take) == {"q8-1", "q8-2"}
    assert result.reordered == ["q7-1"]
    assert result.notices == {"gave_up": 1, "resuming": 1}
    assert [s["message_id"] for s in result.strays] == [1014]
