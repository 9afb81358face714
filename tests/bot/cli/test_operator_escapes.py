"""Operator output never lets a stranger's text drive the terminal.

A display name, a file name the model chose or an audit detail can carry terminal escapes
(``ESC ]0;…BEL`` retitles the window, ``ESC [2J`` clears it, cursor movement rewrites the row
an admin is about to approve) or newlines (a fake row). Tables and lines show them escaped;
``--json`` keeps the exact value.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.cli import main
from bot.messages import (
    ChatType,
    ConversationKey,
    Destination,
    InboundMessage,
    OutboundFile,
    Sender,
)
from bot.records import OutboxItem, PairingRequest, UserStatus
from store.sqlite import SqliteStore

HOSTILE = "Eve\x1b]0;pwned\x07\x1b[2J\x1b[1A\rcarol APPROVED\n\u2028\x9b2J\u202e"
FILE = "report\x1b[31m.pdf\nfake row"


@dataclass(frozen=True, slots=True)
class Result:
    status: int
    out: str
    err: str


def _run(*args: str | Path) -> Result:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([str(arg) for arg in args])
    return Result(status, out.getvalue(), err.getvalue())


async def _seed(state_dir: Path) -> None:
    now = datetime.now(UTC)
    async with SqliteStore.from_state_dir(state_dir) as store:
        await store.access.add_pairing(
            PairingRequest(
                channel="fake", user_id=f"u-{HOSTILE}", display_name=HOSTILE, chat_id="dm-eve",
                code="ABCD2345", created_at=now, expires_at=now + timedelta(hours=1),
            )
        )  # fmt: skip
        destination = Destination(channel="fake", chat_id="dm-eve", chat_type=ChatType.DM)
        delivery = OutboundFile(
            destination=destination, path="outputs/x", name=FILE, size=3, is_image=False
        )
        key = ConversationKey(channel="fake", chat_id="dm-eve")
        item = OutboxItem(
            idempotency_key="k1", delivery=delivery, key=key, thread_id=None, correlation_id="c1"
        )
        await store.outbox.enqueue_rows([item])
        sender = Sender(id=f"eve{HOSTILE}", display_name=HOSTILE)
        message = InboundMessage(
            channel="fake", chat_id="dm-eve", chat_type=ChatType.DM, message_id="m-eve",
            sender=sender, text=HOSTILE,
        )  # fmt: skip
        await store.inbound.record_many([(message, "c1")])
        await store.access.set_status("fake", HOSTILE, UserStatus.DENIED, f"admin {HOSTILE}")
        await store.audit.record(f"fake:{HOSTILE}", "deny", HOSTILE)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    state_dir = tmp_path / "state"
    asyncio.run(_seed(state_dir))
    path = tmp_path / "operator.yaml"
    path.write_text(
        f"config_version: 1\nstate_dir: {state_dir}\nhttp: {{host: 127.0.0.1, port: 9}}\n"
    )
    return path


def _assert_inert(text: str) -> None:
    """No control character but the newlines between rows; no separator, no bidi override."""
    for line in text.split("\n"):
        bad = [c for c in line if ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or c in "\u2028\u202e"]
        assert bad == [], repr(line)


@pytest.mark.parametrize(
    "command",
    [("pairing", "list"), ("outbox", "list"), ("users",), ("audit",)],
)
def test_tables_show_control_characters_escaped(config: Path, command: tuple[str, ...]) -> None:
    shown = _run(*command, "-c", config)
    assert shown.status == 0, shown.err
    _assert_inert(shown.out)
    rows = shown.out.splitlines()
    assert len(rows) == 2, shown.out  # the header and one row: no forged row
    assert "\\x1b" in rows[1]


def test_the_pairing_row_reads_as_the_name_really_is(config: Path) -> None:
    shown = _run("pairing", "list", "-c", config).out
    assert "Eve\\x1b]0;pwned\\x07\\x1b[2J\\x1b[1A\\rcarol APPROVED\\n\\u2028\\x9b2J\\u202e" in shown


def test_json_keeps_the_exact_value(config: Path) -> None:
    listed = json.loads(_run("pairing", "list", "-c", config, "--json").out)
    assert listed[0]["display_name"] == HOSTILE
    rows = json.loads(_run("outbox", "list", "-c", config, "--json").out)
    assert FILE in rows[0]["what"]
    raw = _run("pairing", "list", "-c", config, "--json").out
    _assert_inert(raw)


def test_a_trace_shows_names_escaped(config: Path) -> None:
    shown = _run("trace", "m-eve", "-c", config)
    assert shown.status == 0, shown.err
    _assert_inert(shown.out)
    assert "report\\x1b[31m.pdf\\nfake row" in shown.out
