"""``service install`` and ``check`` from a virtualenv under /tmp: the
system unit's ``PrivateTmp=yes`` would hide the program, so both say so, naming the path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bot.cli.service import program
from bot.cli.unit import hidden_by_unit

REPO = Path(__file__).resolve().parents[3]
PREFIX = Path(sys.prefix)


def _venv_in(folder: Path) -> Path:
    """A virtualenv at ``folder`` sharing this one's packages: its ``bin/python`` runs there."""
    (folder / "bin").mkdir(parents=True)
    (folder / "pyvenv.cfg").write_text((PREFIX / "pyvenv.cfg").read_text())
    (folder / "lib").symlink_to(PREFIX / "lib")
    python = folder / "bin" / "python"
    python.symlink_to(Path(sys.executable).resolve())
    return python


def _run(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SWITCHBOARD_"))}
    return subprocess.run(  # noqa: S603 - our own CLI
        [str(python), "-m", "bot", *args],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=60, check=False,
    )  # fmt: skip


def test_install_from_tmp_warns_that_the_unit_would_hide_the_program(tmp_path: Path) -> None:
    assert tmp_path.is_relative_to("/tmp")
    python = _venv_in(tmp_path / "venv")
    result = _run(python, "service", "install", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "PrivateTmp=yes" in result.stdout
    warning = result.stderr
    assert warning.startswith(f"warning: {python} is under /tmp")
    assert "/opt/switchboard" in warning
    assert "--user" in warning
    user_unit = _run(python, "service", "install", "--user", "--dry-run")
    assert user_unit.stderr == ""  # a user unit has no PrivateTmp=


def test_check_from_tmp_warns_too(tmp_path: Path) -> None:
    python = _venv_in(tmp_path / "venv")
    config = REPO / "config" / "switchboard.example.yaml"
    result = _run(python, "check", "-c", str(config))
    assert result.returncode == 0, result.stderr
    assert f"warning: program: {python} is under /tmp" in result.stdout
    here = _run(Path(sys.executable), "check", "-c", str(config))
    hidden = bool(hidden_by_unit(program(), None))  # this checkout may live under /tmp itself
    assert ("warning: program:" in here.stdout) is hidden
