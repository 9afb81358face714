"""``switchboard approvals list|approve|reject|edit`` against a real store (SQLite; PostgreSQL
once): requests listed as chat shows them (secrets masked, long values folded), decided once
under chat's rules and audited as ``cli:<login>``, and left for the daemon's sweep to resume."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import TypeVar

import pytest

from bot.config.loader import load_settings
from bot.ports.approvals import Approval, ApprovalRun, ApprovalState
from bot.registry import store_for
from store.sqlite import SqliteStore
from tests.bot.approvals.requests import approvals_in, paused_run, record, waiting
from tests.bot.cli.cli_support import run_cli
from tests.postgres import fresh_schema, require_postgres

T = TypeVar("T")
LONG_BODY = "lorem ipsum " * 40


@pytest.fixture(autouse=True)
def login(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("USER", "ops")


def _in_store(config: Path, work: Callable[[SqliteStore], Awaitable[T]]) -> T:
    """``work`` on the configured SQLite store (the fixture's ``state/switchboard.db``)."""

    async def run() -> T:
        async with SqliteStore(config.parent / "state" / "switchboard.db") as store:
            return await work(store)

    return asyncio.run(run())


def _recorded(config: Path, run: ApprovalRun, *approvals: Approval) -> None:
    _in_store(config, lambda store: record(store, run, *approvals))


def _approval(config: Path, approval_id: str) -> Approval:
    found = _in_store(config, lambda store: store.approvals.get(approval_id))
    assert found is not None
    return found


def test_list_shows_what_waits_masked_and_folded_as_in_chat(config: Path) -> None:
    run = paused_run("r1", "corr-1")
    nested = {"Authorization": "Bearer t-secret-3", "Accept": "text/plain"}
    args = json.dumps(
        {"to": "ada@example.com", "api_key": "sk-secret-1", "body": LONG_BODY, "headers": nested}
    )
    _recorded(config, run, waiting(run, args=args))
    listed = run_cli("approvals", "list", "-c", config)
    assert listed.status == 0, listed.err
    header, row = listed.out.splitlines()
    assert header.split()[:6] == ["ID", "STATE", "TOOL", "CONVERSATION", "ASKER", "ARGS"]
    assert header.rstrip().endswith("DECIDED BY  DECIDED AT  REASON")
    assert row.split()[:5] == ["r1a0", "pending", "send_email", "telegram", "-100"]
    assert "ada@example.com" in row
    assert "sk-secret-1" not in row
    assert "t-secret-3" not in row
    assert '"api_key": "•••"' in row
    assert f"… ({len(LONG_BODY)} characters)" in row
    (as_json,) = run_cli("approvals", "list", "-c", config, "--json").json()
    assert as_json["args"] == {
        "to": "ada@example.com",
        "api_key": "•••",
        "body": LONG_BODY,
        "headers": {"Authorization": "•••", "Accept": "text/plain"},
    }
    assert (as_json["state"], as_json["run_id"], as_json["allowed"]) == (
        "pending",
        "r1",
        ["approve", "edit", "reject"],
    )
    approved = run_cli("approvals", "list", "--state", "approved", "-c", config)
    assert (approved.status, approved.out.strip()) == (0, "no approved approval requests")


def test_approve_records_the_decision_for_the_sweep_and_a_second_is_refused(
    config: Path,
) -> None:
    run = paused_run("r1", "corr-1")
    _recorded(config, run)
    done = run_cli("approvals", "approve", "r1a0", "-c", config)
    assert done.status == 0, done.err
    assert done.out.strip() == (
        "approved send_email (ID r1a0) in telegram -100; the daemon resumes its run within a"
        " few seconds"
    )
    decided = _approval(config, "r1a0")
    assert (decided.state, decided.decided_by, decided.decided_by_name) == (
        ApprovalState.APPROVED,
        "cli:ops",
        "ops",
    )
    # Not claimed here: the daemon's sweep finds the run settled and resumes it in its lane.
    assert _in_store(config, lambda store: store.approvals.settled_runs()) == [run]
    audit = _in_store(config, lambda store: store.audit.recent(1))
    assert (audit[0].actor, audit[0].action) == ("cli:ops", "approval.approved")
    for again in (("approve", "r1a0"), ("reject", "r1a0", "--reason", "late")):
        refused = run_cli("approvals", *again, "-c", config)
        assert refused.status == 1
        assert "That request was already approved by ops at " in refused.err
    assert _approval(config, "r1a0") == decided


def test_reject_carries_the_reason_and_edit_keeps_the_masked_values(config: Path) -> None:
    run = paused_run("r2", "corr-2")
    nested = '{"to": "ada@example.com", "api_key": "sk-secret-1", "auth": {"token": "t-secret-4"}}'
    _recorded(config, run, waiting(run, 0), waiting(run, 1, args=nested))
    rejected = run_cli("approvals", "reject", "r2a0", "--reason", "wrong recipient", "-c", config)
    assert rejected.status == 0, rejected.err
    assert rejected.out.strip().endswith("; its run waits for 1 more decision(s)")
    assert _approval(config, "r2a0").reason == "wrong recipient"
    new_args = json.dumps(
        {"to": "bob@example.com", "api_key": "•••", "auth": {"token": "•••", "user": "bob"}}
    )
    edited = run_cli("approvals", "edit", "r2a1", new_args, "-c", config, "--json").json()
    assert edited["done"].startswith("approved with new arguments send_email (ID r2a1)")
    assert edited["approval"]["decided_args"] == json.loads(new_args)
    stored = _approval(config, "r2a1")
    assert stored.state is ApprovalState.EDITED
    assert json.loads(stored.decided_args or "") == {
        "to": "bob@example.com",
        "api_key": "sk-secret-1",
        "auth": {"token": "t-secret-4", "user": "bob"},
    }
    everything = run_cli("approvals", "list", "--state", "all", "-c", config, "--json").json()
    assert sorted((a["id"], a["state"], a["reason"]) for a in everything) == [
        ("r2a0", "rejected", "wrong recipient"),
        ("r2a1", "edited", None),
    ]


@pytest.mark.parametrize(
    ("command", "why"),
    [
        (("approve", "nope"), "There is no approval request 'nope'."),
        (("edit", "r3a0", "{not json"), "the new arguments are not valid JSON"),
        (("edit", "r3a0", '["a.txt"]'), "the new arguments must be a JSON object"),
        (("edit", "r3a1", "{}"), "cannot be decided with 'edit' (allowed: approve, reject)"),
        (("approve", "r3a2"), "That request has expired."),
    ],
)
def test_a_request_that_cannot_be_decided_exits_1_saying_why(
    config: Path, command: tuple[str, ...], why: str
) -> None:
    run = paused_run("r3", "corr-3")
    approvals = (
        waiting(run, 0),
        waiting(run, 1, allowed=("approve", "reject")),
        waiting(run, 2, ttl=timedelta(seconds=-1)),
    )
    _recorded(config, run, *approvals)
    refused = run_cli("approvals", *command, "-c", config)
    assert refused.status == 1
    assert why in refused.err
    for approval in approvals:
        assert _approval(config, approval.id).state is ApprovalState.PENDING


@pytest.fixture
async def pg_config(tmp_path: Path) -> AsyncIterator[Path]:
    url = require_postgres()
    async with fresh_schema(url, "t_approvals") as schema:
        path = tmp_path / "switchboard.yaml"
        path.write_text(
            f"config_version: 1\nstate_dir: {tmp_path / 'state'}\nhttp: {{enabled: false}}\n"
            f"store: {{url: '{url}', schema: {schema}}}\n"
        )
        yield path


async def test_the_commands_work_on_postgres(pg_config: Path) -> None:
    store = store_for(load_settings(pg_config, require_secrets=False))
    await store.open()
    try:
        run = paused_run("r4", "corr-4")
        await record(store, run)
        listed = await asyncio.to_thread(run_cli, "approvals", "list", "-c", pg_config, "--json")
        assert [a["id"] for a in listed.json()] == ["r4a0"]
        done = await asyncio.to_thread(run_cli, "approvals", "reject", "r4a0", "-c", pg_config)
        assert done.status == 0, done.err
        decided = await approvals_in(store).get("r4a0")
        assert decided is not None
        assert (decided.state, decided.decided_by) == (ApprovalState.REJECTED, "cli:ops")
        assert await approvals_in(store).settled_runs() == [run]
    finally:
        await store.aclose()
