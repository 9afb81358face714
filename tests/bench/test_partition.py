"""The partition benchmark (``bench/partition.py --short``): three real ``switchboard run``
replicas, each in a network namespace of its own, one cut off from PostgreSQL and later one
stopped with SIGSTOP, each past a 2 s ``daemon.replica_expiry_s`` with turns in flight.

Every question is answered exactly once in both phases, in order: the stalled or cut-off
replica is fenced out of the chats taken from it (design §11 "Fencing"). The stall phase also
leaves no placeholder showing the answer beside the final (``shown_twice``); in the partition
phase one may be left when the cut lands between a placeholder's send and its record (the new
holder cannot know the message), so there it is reported, not asserted. Both phases settle,
every replica stops with exit 0, and nothing is left behind (namespaces, veth links, the /24
route, processes, the schema).

The benchmark runs as a subprocess: its replicas and the fake Telegram talk to the addresses of
the namespaces it creates on this machine, which the suite's loopback guard (rightly) refuses
in the test process itself. It needs root and ``ip`` (skipped, saying why, without them) and
PostgreSQL on 127.0.0.1 (``tests/postgres.py``: it fails when the server is unreachable unless
``SWITCHBOARD_SKIP_POSTGRES=1``). No speed is asserted.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench.netns import PREFIX, problem
from tests.postgres import require_postgres

REPO = Path(__file__).resolve().parents[2]
LIMIT_S = 150.0
"""The subprocess is stopped (SIGTERM: it cleans up) past this. A quiet 2-core machine needs
about 25 s; three replicas importing LangGraph at once on a machine busy with other work took
over 55 s to be ready once, which is slowness, not a fault of what is tested."""


def _run_bench(store_url: str) -> tuple[int, dict[str, Any], str]:
    argv = [sys.executable, str(REPO / "bench" / "partition.py"), "--short",
            "--store-url", store_url]  # fmt: skip
    process = subprocess.Popen(  # noqa: S603 - our own interpreter and script
        argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        out, err = process.communicate(timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    lines = [line for line in out.splitlines() if line.startswith("{")]
    report: dict[str, Any] = json.loads(lines[-1]) if lines else {}
    return process.returncode, report, err[-3000:]


def _ours(tag: str) -> list[str]:
    """Namespaces and links of the run tagged ``tag`` that still exist."""
    names = subprocess.run(
        ["ip", "netns", "list"],  # noqa: S607 - iproute2 from PATH
        capture_output=True, text=True, check=True, timeout=10,
    ).stdout  # fmt: skip
    links = subprocess.run(
        ["ip", "-o", "link"],  # noqa: S607 - iproute2 from PATH
        capture_output=True, text=True, check=True, timeout=10,
    ).stdout  # fmt: skip
    found = [n for n in names.split() if n.startswith(f"{PREFIX}-{tag}-")]
    return found + [line for line in links.splitlines() if f"sbp{tag}" in line]


@pytest.mark.timeout(240)
def test_short_partition_and_stall_answer_everything_once_and_leave_nothing_behind(
    record_property: Callable[[str, object], None], capsys: pytest.CaptureFixture[str]
) -> None:
    why = problem()
    if why is not None:
        pytest.skip(f"network namespaces unavailable: {why}")
    url = require_postgres()
    if urllib.parse.urlsplit(url).hostname not in ("127.0.0.1", "localhost"):
        pytest.skip(f"the bench forwards to PostgreSQL on 127.0.0.1; the test server is {url}")
    code, report, err = _run_bench(url)
    text = json.dumps(report, indent=1)
    record_property("partition", json.dumps(report))
    assert report, f"no JSON line (exit {code}):\n{err}"
    assert "error" not in report, text
    assert code in (0, 1), f"exit {code}:\n{text}\n{err}"
    for name in ("partition", "stall"):
        phase = report[name]
        assert "error" not in phase, f"{name}: {phase['error']}\n{text}"
        assert phase["score"]["questions"] == 16, text
        assert phase["score"]["lost"] == 0, f"{name}: unanswered questions\n{text}"
        assert phase["score"]["duplicated"] == 0, f"{name}: answered twice\n{text}"
        assert phase["score"]["reordered_chats"] == 0, f"{name}: out of order\n{text}"
        assert phase["settled"], f"{name} did not settle\n{text}"
        assert phase["turns_running_at_fault"], f"{name}: the fault hit no turn\n{text}"
    # Placeholders left beside an answer are reported (``shown_twice``, with their calls), not
    # asserted: a fence check passed just before the fault still lets one placeholder out after
    # the takeover, and the lost turn's clean-up of it does not yet catch every case (design §11
    # "Fencing", "What fencing cannot close").
    assert report["exit_codes"] == {f"part-{i}": [0] for i in range(3)}, text
    cleanup = report["cleanup"]
    assert cleanup["clean"], text
    assert not cleanup["schema_left"], text
    assert _ours(cleanup["tag"]) == [], text
    with capsys.disabled():
        sys.stderr.write(f"\npartition bench (short): {_figures(report)}\n")


def _figures(report: dict[str, Any]) -> str:
    parts = []
    for name in ("partition", "stall"):
        phase, score = report[name], report[name]["score"]
        parts.append(
            f"{name}: lost {score['lost']}, duplicated {score['duplicated']}"
            f" (+{len(phase['shown_twice'])} shown twice), reordered {score['reordered_chats']},"
            f" left placeholders {score['left_placeholders']}"
        )
    return "; ".join(parts) + f"; ok={report['ok']}"
