"""What the daemon writes is private (files 0600, folders 0700) whoever starts it and whatever
their umask: outside the unit's ``UMask=0077`` too (``switchboard run``/``chat`` by hand)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.messages import Attachment, AttachmentKind
from bot.ops.instance_lock import InstanceLock
from store.sqlite import SqliteStore
from tests.bot.harness import make_settings, running
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import PLAIN_CAPS, FakeChannel, dm

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "config" / "switchboard.example.yaml"
LOOSE_UMASK = 0o022
"""A login shell's usual umask: without care, files come out 0644 and folders 0755."""


@pytest.fixture
def loose_umask() -> Iterator[None]:
    """This test process creates with ``LOOSE_UMASK``; the code under test must not rely on it."""
    before = os.umask(LOOSE_UMASK)
    try:
        yield
    finally:
        os.umask(before)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def _modes(top: Path) -> dict[str, int]:
    """Every folder and file under ``top`` (and ``top``), relative name → permission bits."""
    found = {".": _mode(top)}
    for path in top.rglob("*"):
        found[str(path.relative_to(top))] = _mode(path)
    return found


def _loose(modes: dict[str, int], top: Path) -> dict[str, str]:
    """What is readable by anyone but the owner, as octal strings (empty when all is private)."""
    return {
        name: oct(mode)
        for name, mode in modes.items()
        if mode != (0o700 if (top / name).is_dir() else 0o600)
    }


def _chat(state_dir: Path, text: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SWITCHBOARD_"))}
    env["SWITCHBOARD_STATE_DIR"] = str(state_dir)
    return subprocess.run(  # noqa: S603 - our own CLI, started as an operator would
        [sys.executable, "-m", "bot", "chat", "-c", str(EXAMPLE), "-m", text],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=60,
        check=False,
        umask=LOOSE_UMASK,
    )


def test_chat_by_hand_with_umask_022_leaves_only_private_files(tmp_path: Path) -> None:
    """The whole tree a turn leaves: state dir and its new parent, lock, store, agent
    checkpoints, the thread's workspace and the file the (offline) agent wrote."""
    top = tmp_path / "new"
    result = _chat(top / "state", "file:note.txt|for the owner only")
    assert result.returncode == 0, result.stderr
    assert (top / "state" / "threads").is_dir()
    assert any(path.name == "note.txt" for path in top.rglob("*"))
    assert _loose(_modes(top), top) == {}


def test_a_loose_state_dir_is_made_private_and_said_once(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    state.chmod(0o755)
    first = _chat(state, "hello")
    assert first.returncode == 0, first.stderr
    assert _mode(state) == 0o700
    assert first.stderr.count("0700") == 1, first.stderr
    assert "0755" in first.stderr
    second = _chat(state, "hello again")
    assert second.returncode == 0, second.stderr
    assert "0700" not in second.stderr


@pytest.mark.usefixtures("loose_umask")
async def test_the_daemon_in_process_creates_private_state(tmp_path: Path) -> None:
    """Without the command line's umask: explicit modes for the state dir, the lock, the
    SQLite file (its -wal and -shm copy it), the workspace and a saved upload."""
    state = tmp_path / "state"
    settings = make_settings(state)
    channel, agent = FakeChannel(caps=PLAIN_CAPS), FakeAgent()
    channel.files = {"ref-1": b"a,b\n1,2\n"}
    upload = Attachment(kind=AttachmentKind.FILE, name="data.csv", mime="text/csv", ref="ref-1")
    async with running(settings, [channel], agent):
        await channel.inject(dm("first", message_id="1", attachments=(upload,)))
        await channel.wait_text("echo: first")
        while_running = _modes(state)
    assert {"switchboard.db", "switchboard.db-wal", "switchboard.db-shm"} <= set(while_running)
    assert "switchboard.lock" in while_running
    assert "threads/t1/uploads/data.csv" in while_running
    assert _loose(while_running, state) == {}


@pytest.mark.usefixtures("loose_umask")
async def test_the_store_makes_its_folder_and_file_private(tmp_path: Path) -> None:
    """``store migrate`` and the operator commands open the store without the daemon."""
    state = tmp_path / "fresh" / "state"
    async with SqliteStore.from_state_dir(state) as store:
        await store.settings.set("probe", "1")
        modes = _modes(tmp_path / "fresh")
    assert "state/switchboard.db-wal" in modes
    assert _loose(modes, tmp_path / "fresh") == {}


@pytest.mark.usefixtures("loose_umask")
def test_the_instance_lock_makes_its_folder_private(tmp_path: Path) -> None:
    lock = InstanceLock(tmp_path / "fresh" / "state")
    with lock:
        modes = _modes(tmp_path / "fresh")
    assert modes["state/switchboard.lock"] == 0o600
    assert _loose(modes, tmp_path / "fresh") == {}
