"""Every reference a user is shown can be traced: the ``ref`` of an error reply is the turn's
correlation id, and ``switchboard trace REF`` finds its message; ``switchboard conversations
--messages`` lists the recent inbound ids to trace."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.bot.cli.cli_support import run_cli as _run
from tests.bot.harness import routed, running
from tests.bot.ops.push_support import post, push_settings
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import FakeChannel, dm

REF = re.compile(r"\(ref `([0-9a-z-]+)`\)")


async def _prepare(state_dir: Path) -> Prepared:
    """A failed turn (its reply shows a ref), a handled message, a text push and a
    ``run_agent`` push (``switchboard send`` and the API print their delivery ids)."""
    channel = FakeChannel()
    async with running(push_settings(state_dir), [channel], FakeAgent()) as daemon:
        await channel.inject(dm("fail: the model could not be reached", message_id="m1"))
        failed = await channel.wait_text("(ref `")
        await channel.inject(dm("hi", message_id="m2", user="bob"))
        await channel.wait_text("echo: hi")
        await routed(daemon.kernel, 2)
        target = {"channel": "fake", "chat": "dm-bob"}
        _, text, _ = await post(daemon.daemon, {**target, "text": "deployed"})
        _, run, _ = await post(daemon.daemon, {**target, "run_agent": {"prompt": "sum up"}})
        await channel.wait_text("echo: sum up")
        await daemon.kernel.conversations.lanes.wait_idle()
        await daemon.kernel.delivery.outbox.wait_idle()
    found = REF.search(failed.text)
    assert found is not None, failed.text
    return Prepared(state_dir, found[1], text["delivery_id"], run["delivery_id"])


@dataclass(frozen=True, slots=True)
class Prepared:
    state_dir: Path
    ref: str
    text_push: str
    run_push: str


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Prepared:
    state_dir = tmp_path_factory.mktemp("refs") / "state"
    return asyncio.run(_prepare(state_dir))


@pytest.fixture
def config(prepared: Prepared, tmp_path: Path) -> Path:
    state_dir = tmp_path / "state"
    shutil.copytree(prepared.state_dir, state_dir)
    path = tmp_path / "operator.yaml"
    path.write_text(
        f"config_version: 1\nstate_dir: {state_dir}\nhttp: {{host: 127.0.0.1, port: 9}}\n"
    )
    return path


def test_the_ref_of_an_error_reply_traces_its_turn(config: Path, prepared: Prepared) -> None:
    result = _run("trace", prepared.ref, "-c", config, "--json")
    assert result.status == 0, result.err
    found = result.json()
    assert found["matched"] == "correlation_id"
    (entry,) = found["entries"]
    assert (entry["message_id"], entry["correlation_id"]) == ("m1", prepared.ref)
    assert entry["status"] == "failed"
    rows = entry["outbox"]  # the error reply (and its reaction) carry the ref
    assert rows
    assert {row["correlation_id"] for row in rows} == {prepared.ref}
    assert "sent" in {row["state"] for row in rows}
    text = _run("trace", prepared.ref, "-c", config)
    assert text.status == 0, text.err
    assert f"ref {prepared.ref} is a correlation id" in text.out
    assert "message m1 on fake" in text.out


def test_a_message_id_is_still_traced_as_one(config: Path) -> None:
    found = _run("trace", "m2", "-c", config, "--json").json()
    assert found["matched"] == "message_id"
    assert [entry["message_id"] for entry in found["entries"]] == ["m2"]


def test_the_delivery_ids_of_pushes_are_traced(config: Path, prepared: Prepared) -> None:
    pushed = _run("trace", prepared.text_push, "-c", config, "--json").json()
    assert (pushed["delivery_id"], pushed["status"]) == (prepared.text_push, "sent")
    run = _run("trace", prepared.run_push, "-c", config, "--json").json()
    (entry,) = run["entries"]  # the prompt is journaled as a message under its delivery id
    assert (entry["message_id"], entry["correlation_id"]) == (prepared.run_push,) * 2
    assert entry["status"] == "handled"


def test_a_ref_on_another_channel_is_not_found(config: Path, prepared: Prepared) -> None:
    result = _run("trace", prepared.ref, "--channel", "slack", "-c", config)
    assert result.status == 1
    assert f"no journal entry for message {prepared.ref} on slack" in result.err
    assert "conversations --messages" in result.err  # where to find an id that is


def test_conversations_messages_lists_recent_inbound_ids(config: Path, prepared: Prepared) -> None:
    listed = _run("conversations", "--messages", "-c", config)
    assert listed.status == 0, listed.err
    header, *lines = listed.out.splitlines()
    assert header.split() == ["RECEIVED", "CHANNEL", "CHAT", "MESSAGE", "REF", "STATUS"]
    pushed, newer, older = (line.split() for line in lines)
    assert pushed[2:6] == ["fake", "dm-bob", prepared.run_push, prepared.run_push]
    assert newer[2:5] == ["fake", "dm-bob", "m2"]
    assert newer[6] == "handled"
    assert older[2:6] == ["fake", "dm-alice", "m1", prepared.ref]
    assert older[6] == "failed"
    rows = _run("conversations", "--messages", "--json", "-c", config).json()
    assert [row["message_id"] for row in rows] == [prepared.run_push, "m2", "m1"]
    assert rows[2]["correlation_id"] == prepared.ref
    assert set(rows[2]) >= {"channel", "chat_id", "status", "reason", "received_at", "entry_id"}
    assert "fail:" not in listed.out
    assert "fail:" not in json.dumps(rows)
    only = _run("conversations", "--messages", "--limit", "1", "--json", "-c", config).json()
    assert [row["message_id"] for row in only] == [prepared.run_push]
    none = _run("conversations", "--messages", "--channel", "slack", "-c", config)
    assert none.status == 0
    assert "no journaled messages" in none.out
