"""``service uninstall`` against a fake ``systemctl``: an executable script on ``PATH`` that
records each call and whether the unit file still existed then."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bot.cli import main

FAKE_SYSTEMCTL = """#!/bin/sh
unit="{unit}"
if [ -e "$unit" ]; then there=file; else there=gone; fi
printf '%s [%s]\\n' "$*" "$there" >> "{log}"
case " $* " in *" {fail} "*) echo "Failed to {fail} unit: Access denied" >&2; exit 1;; esac
exit 0
"""


class FakeSystemctl:
    def __init__(self, directory: Path, unit: Path, *, fail: str = "never") -> None:
        self.log = directory / "systemctl.log"
        directory.mkdir(parents=True, exist_ok=True)
        script = directory / "systemctl"
        script.write_text(FAKE_SYSTEMCTL.format(unit=unit, log=self.log, fail=fail))
        script.chmod(0o755)

    @property
    def calls(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    return home


@pytest.fixture
def root(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    root = tmp_path / "root"
    assert main(["service", "install", "--root", str(root)]) == 0
    capsys.readouterr()
    return root


def _uninstall(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(["service", "uninstall", *args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_uninstall_stops_and_disables_before_removing_the_unit(
    tmp_path: Path, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    unit = root / "etc/systemd/system/switchboard.service"
    systemctl = FakeSystemctl(tmp_path / "bin", unit)
    status, out, _ = _uninstall(capsys, "--root", str(root))
    assert status == 0
    assert systemctl.calls == [
        "disable --now switchboard.service [file]",
        "reset-failed switchboard.service [file]",
        "daemon-reload [gone]",
    ]
    assert not unit.exists()
    assert (root / "etc/switchboard/switchboard.env").exists()  # secrets stay
    assert "/var/lib/switchboard" in out
    assert "kept" in out.lower()


def test_a_user_uninstall_talks_to_the_user_manager(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "root"
    assert main(["service", "install", "--user", "--root", str(root)]) == 0
    unit = root / home.relative_to("/") / ".config/systemd/user/switchboard.service"
    systemctl = FakeSystemctl(tmp_path / "bin", unit)
    status, out, _ = _uninstall(capsys, "--user", "--root", str(root))
    assert status == 0
    assert systemctl.calls == [
        "--user disable --now switchboard.service [file]",
        "--user reset-failed switchboard.service [file]",
        "--user daemon-reload [gone]",
    ]
    assert str(home / ".local/state/switchboard") in out


def test_dry_run_prints_the_steps_in_order_and_changes_nothing(
    tmp_path: Path, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    unit = root / "etc/systemd/system/switchboard.service"
    systemctl = FakeSystemctl(tmp_path / "bin", unit)
    status, out, _ = _uninstall(capsys, "--dry-run", "--root", str(root))
    assert status == 0
    assert systemctl.calls == []
    assert unit.exists()
    steps = [
        "systemctl disable --now switchboard.service",
        "systemctl reset-failed switchboard.service",
        f"rm {unit}",
        "systemctl daemon-reload",
    ]
    positions = [out.find(step) for step in steps]
    assert -1 not in positions, out
    assert positions == sorted(positions), out


def test_a_failed_stop_leaves_the_unit_in_place(
    tmp_path: Path, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    unit = root / "etc/systemd/system/switchboard.service"
    systemctl = FakeSystemctl(tmp_path / "bin", unit, fail="disable")
    status, _, err = _uninstall(capsys, "--root", str(root))
    assert status != 0
    assert unit.exists()
    assert systemctl.calls == ["disable --now switchboard.service [file]"]
    assert "systemctl disable --now switchboard.service" in err
    assert "Access denied" in err
    assert "left" in err


def test_without_systemctl_the_links_are_removed_by_hand(
    root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """No systemd here (a container, a chroot): nothing can run the unit; remove what
    ``systemctl disable`` would have."""
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    units = root / "etc/systemd/system"
    wants = units / "multi-user.target.wants"
    wants.mkdir()
    (wants / "switchboard.service").symlink_to("/etc/systemd/system/switchboard.service")
    status, out, _ = _uninstall(capsys, "--root", str(root))
    assert status == 0
    assert not (units / "switchboard.service").exists()
    assert not (wants / "switchboard.service").is_symlink()
    assert "systemctl" in out


def test_uninstalling_one_instance_keeps_the_template_for_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "root"
    wants = root / "etc/systemd/system/multi-user.target.wants"
    wants.mkdir(parents=True)
    for name in ("a", "b"):
        assert main(["service", "install", "--root", str(root), "--instance", name]) == 0
        (wants / f"switchboard@{name}.service").symlink_to(
            "/etc/systemd/system/switchboard@.service"
        )
    template = root / "etc/systemd/system/switchboard@.service"
    systemctl = FakeSystemctl(tmp_path / "bin", template)
    capsys.readouterr()
    _, out, _ = _uninstall(capsys, "--root", str(root), "--instance", "a")
    assert template.exists()
    assert "still enabled for switchboard@b.service" in out
    assert "/var/lib/switchboard/a" in out
    assert systemctl.calls[0] == "disable --now switchboard@a.service [file]"
    (wants / "switchboard@a.service").unlink()  # what the real `disable` would have done
    _, out, _ = _uninstall(capsys, "--root", str(root), "--instance", "b")
    assert not template.exists()
    assert systemctl.calls[-1] == "daemon-reload [gone]"
