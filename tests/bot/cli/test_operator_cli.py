"""The operator commands reading a store that the real daemon (fake channel and agent) wrote,
and a live daemon's ``/readyz`` (design §13).

The acceptance paths run ``python -m bot`` as a subprocess, as an operator would; the rest call
the same ``main()`` in-process, which keeps the module fast (an interpreter start costs ~1 s).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import sys
from pathlib import Path

import pytest

from bot.cli.operator.parsers import STATES
from bot.errors import Forbidden, RateLimited
from bot.ports import Admission
from bot.records import OutboxState, UserStatus
from store.sqlite import SqliteStore
from tests.bot.cli.cli_support import Result
from tests.bot.cli.cli_support import run_cli as _run
from tests.bot.harness import Running, make_settings, routed, running
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import AUTH_FAILED, PLAIN_CAPS, FakeChannel, dm

REPO = Path(__file__).resolve().parents[3]
OPERATOR = "ops-tester"


async def _cli(*args: str | Path) -> Result:
    """``python -m bot ARGS`` as a subprocess, exactly as an operator runs it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SWITCHBOARD_"))}
    env["USER"] = OPERATOR
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", *map(str, args),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env, cwd=REPO,
    )  # fmt: skip
    async with asyncio.timeout(60):
        out, err = await process.communicate()
    assert process.returncode is not None
    return Result(process.returncode, out.decode(), err.decode())


def _config(folder: Path, state_dir: Path, port: int = 9) -> Path:
    path = folder / "operator.yaml"
    path.write_text(
        f"config_version: 1\nstate_dir: {state_dir}\nhttp: {{host: 127.0.0.1, port: {port}}}\n"
    )
    return path


async def _prepare(state_dir: Path) -> None:
    """A handled message delivered on the second try and redelivered twice, a dead reply,
    and two access requests."""
    settings = make_settings(state_dir, access={"dm_policy": "pairing"})
    channel, agent = FakeChannel(caps=PLAIN_CAPS), FakeAgent()
    async with running(settings, [channel], agent) as daemon:
        kernel = daemon.kernel
        for user in ("alice", "bob"):
            await kernel.store.access.set_status("fake", user, UserStatus.APPROVED, "test")
        channel.fail_next.append(RateLimited("429 too many requests", retry_after=0.05))
        assert await channel.inject(dm("hi", message_id="m1")) is Admission.ACCEPTED
        await channel.wait_text("echo: hi")
        for _ in range(2):
            assert await channel.inject(dm("hi", message_id="m1")) is Admission.DUPLICATE
        channel.fail_next.append(Forbidden("bot was blocked by the user"))
        await channel.inject(dm("hello", message_id="m2", user="bob"))
        await routed(kernel, 2)
        await kernel.conversations.lanes.wait_idle()
        await kernel.delivery.outbox.wait_idle()
        for index, user in enumerate(("carol", "dave"), start=3):
            await channel.inject(dm("let me in", message_id=f"m{index}", user=user))
        await routed(kernel, 4)
        await kernel.delivery.outbox.wait_idle()


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    state_dir = tmp_path_factory.mktemp("prepared") / "state"
    asyncio.run(_prepare(state_dir))
    return state_dir


@pytest.fixture
def config(prepared: Path, tmp_path: Path) -> Path:
    """A config pointing at a private copy of the prepared state (tests change it)."""
    state_dir = tmp_path / "state"
    shutil.copytree(prepared, state_dir)
    return _config(tmp_path, state_dir)


# --------------------------------------------------------------------------- trace


async def test_trace_shows_the_whole_path_of_a_handled_message(config: Path) -> None:
    result = await _cli("trace", "m1", "-c", config, "--json")
    assert result.status == 0, result.err
    (entry,) = result.json()["entries"]
    assert entry["dedupe"]["decisions"] == ["accepted", "duplicate", "duplicate"]
    assert entry["status"] == "handled"
    assert entry["reason"] == f"turn {entry['correlation_id']}"
    assert entry["answered_by"] == entry["correlation_id"]
    assert entry["run"] == f"answered by turn {entry['correlation_id']}"
    assert entry["key"]["chat_id"] == "dm-alice"
    assert entry["thread_id"] == "t1"
    (row,) = entry["outbox"]
    # The 429 only asked to wait: it is in the call history but cost no attempt.
    assert (row["state"], row["attempts"], row["sent_message_ids"]) == ("sent", 1, ["b1"])
    calls = [(call["outcome"], call["detail"]) for call in row["calls"]]
    assert calls == [("rate_limited", "429 too many requests"), ("sent", "b1")]


async def test_trace_shows_the_duplicate_decision_of_redeliveries(config: Path) -> None:
    result = await _cli("trace", "m1", "--channel", "fake", "-c", config)
    assert result.status == 0, result.err
    assert "accepted, then duplicate x2 (redeliveries dropped; last 20" in result.out
    assert "handled (turn " in result.out
    assert "thread       t1" in result.out
    assert "rate_limited  429 too many requests" in result.out
    assert "sent          b1" in result.out
    assert "hi" not in result.out.split()  # never the message text


def test_trace_of_a_dead_reply_and_of_a_dropped_message(config: Path) -> None:
    (dead,) = _run("trace", "m2", "-c", config, "--json").json()["entries"]
    assert dead["dedupe"] == {"decisions": ["accepted"], "duplicates": 0, "last_duplicate_at": None}
    (row,) = dead["outbox"]
    assert row["state"] == "dead"
    assert [call["outcome"] for call in row["calls"]] == ["forbidden"]
    dropped = _run("trace", "m3", "-c", config)
    assert dropped.status == 0, dropped.err
    assert "dropped (not_allowed)" in dropped.out
    assert "no run: dropped (not_allowed)" in dropped.out
    assert "text notice" in dropped.out  # the reply carrying the pairing code


def test_trace_of_an_unknown_message_fails(config: Path) -> None:
    result = _run("trace", "m1", "--channel", "slack", "-c", config)
    assert result.status == 1
    assert "no journal entry for message m1 on slack" in result.err


# --------------------------------------------------------------------------- outbox


def test_the_parser_knows_every_outbox_state() -> None:
    assert tuple(OutboxState) == STATES


def test_outbox_list_by_state(config: Path) -> None:
    dead = _run("outbox", "list", "--state", "dead", "-c", config, "--json").json()
    assert [(row["state"], row["chat_id"]) for row in dead] == [("dead", "dm-bob")]
    assert "forbidden" in dead[0]["last_error"]
    table = _run("outbox", "list", "-c", config)
    assert table.status == 0, table.err
    header, *rows = table.out.splitlines()
    assert header.split()[:3] == ["ID", "STATE", "ATTEMPTS"]
    assert len(rows) == 4
    assert {row.split()[1] for row in rows} == {"sent", "dead"}
    assert _run("outbox", "list", "--limit", "1", "-c", config).out.count("\n") == 2


def test_outbox_retry_revives_dead_rows_and_audits(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("USER", OPERATOR)
    (dead,) = _run("outbox", "list", "--state", "dead", "-c", config, "--json").json()
    missing = _run("outbox", "retry", "999", "-c", config)
    assert missing.status == 1
    assert "row 999 not revived: no such row" in missing.out
    result = _run("outbox", "retry", str(dead["id"]), "-c", config)
    assert result.status == 0, result.err
    assert "revived 1 dead row" in result.out
    pending = _run("outbox", "list", "--state", "pending", "-c", config, "--json").json()
    assert [(row["id"], row["attempts"]) for row in pending] == [(dead["id"], 0)]
    assert _run("outbox", "retry", "-c", config).out.startswith("revived 0 dead row")
    assert (f"cli:{OPERATOR}", "outbox retry") in _audit(config)


def test_outbox_purge_refuses_pending_and_takes_the_call_history(config: Path) -> None:
    refused = _run("outbox", "purge", "--state", "pending", "-c", config)
    assert refused.status == 1
    assert "refusing to purge pending rows" in refused.err
    purged = _run("outbox", "purge", "--state", "sent", "-c", config, "--json")
    assert purged.status == 0, purged.err
    assert purged.json()["purged"] == 3
    left = _run("outbox", "list", "-c", config, "--json").json()
    assert [row["state"] for row in left] == ["dead"]
    (entry,) = _run("trace", "m1", "-c", config, "--json").json()["entries"]
    assert entry["outbox"] == []


# --------------------------------------------------------------------------- pairing


def test_pairing_list_approve_and_deny(config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("USER", OPERATOR)
    listed = _run("pairing", "list", "-c", config, "--json")
    codes = {request["user_id"]: request["code"] for request in listed.json()}
    assert set(codes) == {"carol", "dave"}
    table = _run("pairing", "list", "-c", config)
    assert table.out.splitlines()[0].split()[:3] == ["CODE", "CHANNEL", "USER"]
    approved = _run("pairing", "approve", codes["carol"].lower(), "-c", config)
    assert approved.status == 0, approved.err
    assert "approved Carol (fake:carol)" in approved.out
    again = _run("pairing", "approve", codes["carol"], "-c", config)
    assert again.status == 1
    assert "no pending request" in again.err
    assert _run("pairing", "deny", codes["dave"], "-c", config).status == 0
    assert _run("pairing", "list", "-c", config, "--json").json() == []
    assert _user_status(config, "carol") is UserStatus.APPROVED
    assert _user_status(config, "dave") is None
    audit = _audit(config)
    assert (f"cli:{OPERATOR}", "pairing approve") in audit
    assert (f"cli:{OPERATOR}", "pairing deny") in audit


def test_users_lists_who_was_let_in(config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("USER", OPERATOR)
    (code,) = [r["code"] for r in _run("pairing", "list", "-c", config, "--json").json()
               if r["user_id"] == "carol"]  # fmt: skip
    assert _run("pairing", "approve", code, "-c", config).status == 0
    listed = _run("users", "-c", config, "--json")
    assert listed.status == 0, listed.err
    by_user = {u["user_id"]: (u["status"], u["changed_by"]) for u in listed.json()}
    assert by_user == {
        "alice": ("approved", "test"),
        "bob": ("approved", "test"),
        "carol": ("approved", f"cli:{OPERATOR}"),
    }
    header, *rows = _run("users", "-c", config).out.splitlines()
    assert header.split() == ["CHANNEL", "USER", "STATUS", "BY", "CHANGED"]
    assert [row.split()[1] for row in rows] == ["alice", "bob", "carol"]
    assert _run("users", "--channel", "slack", "-c", config).out.strip() == (
        "no users allowed or denied yet"
    )


def test_audit_lists_the_latest_admin_actions_first(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _run("audit", "-c", config).out.strip() == "no admin actions recorded"
    monkeypatch.setenv("USER", OPERATOR)
    for code in [r["code"] for r in _run("pairing", "list", "-c", config, "--json").json()]:
        assert _run("pairing", "deny", code, "-c", config).status == 0
    assert _run("outbox", "retry", "-c", config).status == 0
    entries = _run("audit", "-c", config, "--json").json()
    assert [(e["actor"], e["action"]) for e in entries] == [
        (f"cli:{OPERATOR}", "outbox retry"),
        (f"cli:{OPERATOR}", "pairing deny"),
        (f"cli:{OPERATOR}", "pairing deny"),
    ]
    assert len(_run("audit", "--limit", "1", "-c", config, "--json").json()) == 1
    header, *rows = _run("audit", "-c", config).out.splitlines()
    assert header.split() == ["AT", "ACTOR", "ACTION", "DETAIL"]
    assert len(rows) == 3


# --------------------------------------------------------------------------- conversations


def test_conversations_table_and_filters(config: Path) -> None:
    result = _run("conversations", "-c", config)
    assert result.status == 0, result.err
    header, *rows = result.out.splitlines()
    assert header.split() == ["CHANNEL", "CHAT", "TOPIC", "USER", "THREAD", "UPDATED"]
    assert sorted(row.split()[1] for row in rows) == ["dm-alice", "dm-bob"]
    limited = _run("conversations", "--limit", "1", "-c", config, "--json").json()
    assert len(limited) == 1
    assert limited[0]["key"]["channel"] == "fake"
    other = _run("conversations", "--channel", "slack", "-c", config)
    assert other.out.strip() == "no active conversations"


# --------------------------------------------------------------------------- status


async def test_status_of_a_running_daemon(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    async with running(make_settings(state_dir), [FakeChannel()], FakeAgent()) as daemon:
        await daemon.kernel.hub.set_paused("*", paused=True)
        config = _config(tmp_path, state_dir, _http_port(daemon))
        assert daemon.daemon.heartbeat is not None
        replica_id = daemon.daemon.heartbeat.replica.id
        result = await _cli("status", "-c", config, "--json")
        text = await asyncio.to_thread(_run, "status", "-c", config)
    assert result.status == 0, result.err
    status = result.json()
    assert status["ready"] is True
    assert status["daemon"]["reasons"] == []
    assert status["store"]["outbox"] == {"pending": 0, "sent": 0, "dead": 0}
    assert status["store"]["paused"] == ["*"]
    assert status["store"]["backend"] == "sqlite"
    assert [(r["id"], r["pid"], r["backend"]) for r in status["replicas"]] == [
        (replica_id, os.getpid(), "sqlite")
    ]
    assert text.status == 0, text.err
    assert "ready (http://127.0.0.1:" in text.out
    assert "paused         all channels" in text.out
    assert "replicas       1 live" in text.out
    assert replica_id in text.out


async def test_status_of_a_daemon_that_is_not_ready(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    channel = FakeChannel()
    channel.start_failures.append(AUTH_FAILED)
    async with running(make_settings(state_dir), [channel], FakeAgent()) as daemon:
        config = _config(tmp_path, state_dir, _http_port(daemon))
        result = await asyncio.to_thread(_run, "status", "-c", config, "--json")
    assert result.status == 1
    assert result.json()["daemon"]["reachable"] is True
    assert any("channel fake" in reason for reason in result.json()["daemon"]["reasons"])


async def test_status_without_a_daemon_or_a_store(tmp_path: Path) -> None:
    config = _config(tmp_path, tmp_path / "state", _closed_port())
    result = await _cli("status", "-c", config)
    assert result.status == 1
    assert "NOT RUNNING" in result.out
    assert "daemon not running or not reachable" in result.out
    assert "no database at" in result.out
    assert "replicas" not in result.out  # nothing known without a store
    listed = await asyncio.to_thread(_run, "outbox", "list", "-c", config)
    assert listed.status == 1
    assert "no database at" in listed.err
    assert not (tmp_path / "state").exists()  # never created by a reading command


# --------------------------------------------------------------------------- helpers


def _http_port(daemon: Running) -> int:
    assert daemon.daemon.http is not None
    assert daemon.daemon.http.port is not None
    return daemon.daemon.http.port


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _audit(config: Path) -> list[tuple[str, str]]:
    async def read() -> list[tuple[str, str]]:
        async with _store(config) as store:
            return [(entry.actor, entry.action) for entry in await store.audit.recent()]

    return asyncio.run(read())


def _user_status(config: Path, user: str) -> UserStatus | None:
    async def read() -> UserStatus | None:
        async with _store(config) as store:
            return await store.access.status("fake", user)

    return asyncio.run(read())


def _store(config: Path) -> SqliteStore:
    return SqliteStore.from_state_dir(config.parent / "state")
