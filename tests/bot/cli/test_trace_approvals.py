"""``switchboard trace`` shows the approvals a turn paused for under its message (tool, state,
who decided when, the reason, the edited arguments masked), and takes an approval's id or
``approval-RUN`` for the run itself with the messages under its own correlation id."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.messages import utc_now
from bot.ports.approvals import ApprovalState, Decided
from store.sqlite import SqliteStore
from tests.bot.approvals.requests import paused_run, record, waiting
from tests.bot.cli.cli_support import run_cli
from tests.store.support import enqueue, inbound, item
from tests.store.support import record as journal

TURN = "0a3fafffb832"


@pytest.fixture
def traced(config: Path) -> Path:
    """A journaled message whose turn paused for two tool calls: one rejected with a reason,
    one approved with edited arguments; an edit of a request under the run's own id."""

    async def prepare() -> None:
        async with SqliteStore(config.parent / "state" / "switchboard.db") as store:
            await journal(store, inbound("m-77", chat_id="-100"), TURN)
            run = paused_run("r1", TURN)
            await record(store, run, waiting(run, 0), waiting(run, 1, tool="write_file"))
            now = utc_now()
            rejected = Decided(
                state=ApprovalState.REJECTED, by="telegram:42", by_name="Ben", at=now,
                reason="wrong recipient",
            )  # fmt: skip
            edited = Decided(
                state=ApprovalState.EDITED, by="console:ann", by_name="ann", at=now,
                args='{"path": "b.txt", "token": "t-secret-2"}',
            )  # fmt: skip
            assert await store.approvals.decide("r1a0", rejected)
            assert await store.approvals.decide("r1a1", edited)
            await enqueue(store, [item("approval/r1a0/decided", correlation_id="approval-r1")])

    asyncio.run(prepare())
    return config


def test_a_message_shows_the_approvals_its_turn_paused_for(traced: Path) -> None:
    shown = run_cli("trace", "m-77", "-c", traced)
    assert shown.status == 0, shown.err
    text = shown.out
    assert f"approval run r1 of turn {TURN} in telegram -100" in text
    assert "not resumed yet" in text
    header = next(line for line in text.splitlines() if "APPROVAL" in line)
    assert header.split() == ["APPROVAL", "TOOL", "STATE", "DECIDED", "BY", "DECIDED", "AT",
                              "REASON", "EDITED", "ARGS"]  # fmt: skip
    rejected = next(line for line in text.splitlines() if line.strip().startswith("r1a0"))
    assert "rejected" in rejected
    assert "Ben (telegram:42)" in rejected
    assert "wrong recipient" in rejected
    edited = next(line for line in text.splitlines() if line.strip().startswith("r1a1"))
    assert '{"path": "b.txt", "token": "•••"}' in edited
    assert "t-secret-2" not in text
    (entry,) = run_cli("trace", "m-77", "-c", traced, "--json").json()["entries"]
    (run,) = entry["approvals"]
    assert (run["run_id"], run["correlation_id"], run["resumed_at"]) == ("r1", TURN, None)
    states = [(a["id"], a["state"], a["decided_by"]) for a in run["approvals"]]
    assert states == [("r1a0", "rejected", "telegram:42"), ("r1a1", "edited", "console:ann")]
    assert run["approvals"][1]["decided_args"] == {"path": "b.txt", "token": "•••"}


@pytest.mark.parametrize("name", ["approval-r1", "r1a1"])
def test_a_run_is_traced_by_its_own_id_or_an_approvals(traced: Path, name: str) -> None:
    found = run_cli("trace", name, "-c", traced, "--json").json()
    assert (found["run_id"], found["correlation_id"]) == ("r1", TURN)
    assert [row["idempotency_key"] for row in found["outbox"]] == ["approval/r1a0/decided"]
    text = run_cli("trace", name, "-c", traced).out
    assert "approval run r1" in text
    assert f"`switchboard trace {TURN}`: the turn that paused" in text


def test_a_message_without_approvals_shows_none(config: Path) -> None:
    async def prepare() -> None:
        async with SqliteStore(config.parent / "state" / "switchboard.db") as store:
            await journal(store, inbound("m-1"), "corr-plain")

    asyncio.run(prepare())
    (entry,) = run_cli("trace", "m-1", "-c", config, "--json").json()["entries"]
    assert entry["approvals"] == []
    assert "approval run" not in run_cli("trace", "m-1", "-c", config).out
    missing = run_cli("trace", "approval-nope", "-c", config)
    assert missing.status == 1
    assert "schedule-ID or approval id matches" in missing.err
