"""``switchboard service install/uninstall`` and the unit files, checked by systemd's own tools.

``systemd-analyze verify`` refuses a unit whose ExecStart program does not exist, so units are
verified as ``service install`` renders them for this interpreter (which exists), in a
temporary directory. CI needs the ``systemd`` package for it (``apt-get install -y systemd``).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli import main
from bot.cli.service import program
from bot.cli.unit import DEFAULT_PROGRAM, plan_unit, render_unit

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "config" / "switchboard.example.yaml"
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
needs_systemd_analyze = pytest.mark.skipif(
    SYSTEMD_ANALYZE is None, reason="systemd-analyze not installed (apt-get install -y systemd)"
)


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    return home


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    status = main(["service", *args])
    return status, capsys.readouterr().out


def _verify(unit: Path, tmp_path: Path, *, user: bool = False) -> None:
    assert SYSTEMD_ANALYZE is not None
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime)}  # the user manager wants one
    scope = ["--user"] if user else []
    result = subprocess.run(  # noqa: S603 - systemd's own checker
        [SYSTEMD_ANALYZE, *scope, "verify", str(unit)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert unit.name not in result.stderr, result.stderr


def _write_unit(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    unit = directory / name
    unit.write_text(text)
    return unit


@needs_systemd_analyze
@pytest.mark.parametrize("user", [False, True], ids=["system", "user"])
def test_dry_run_unit_passes_systemd_analyze_verify(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *, user: bool
) -> None:
    status, text = _cli(capsys, "install", "--dry-run", *(["--user"] if user else []))
    assert status == 0
    assert f"ExecStart={' '.join(program())} run -c " in text
    _verify(_write_unit(tmp_path / "units", "switchboard.service", text), tmp_path, user=user)
    assert not (tmp_path / "home" / ".config").exists()  # a dry run writes nothing


@needs_systemd_analyze
def test_dry_run_instance_template_passes_verify(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, text = _cli(capsys, "install", "--dry-run", "--instance", "sales")
    assert status == 0
    assert "-c /etc/switchboard/%i.yaml" in text
    assert "StateDirectory=switchboard/%i" in text
    units = tmp_path / "units"
    _verify(_write_unit(units, "switchboard@.service", text), tmp_path)
    _verify(_write_unit(units, "switchboard@sales.service", text), tmp_path)


@needs_systemd_analyze
@pytest.mark.parametrize("name", ["switchboard.service", "switchboard@.service"])
def test_repository_units_pass_verify_with_an_existing_program(tmp_path: Path, name: str) -> None:
    text = (REPO / "systemd" / name).read_text()
    assert f"ExecStart={DEFAULT_PROGRAM} run -c /etc/switchboard/" in text
    text = text.replace(DEFAULT_PROGRAM, program()[0] if len(program()) == 1 else sys.executable)
    _verify(_write_unit(tmp_path / "units", name, text), tmp_path)


@pytest.mark.parametrize(
    ("name", "instance"), [("switchboard.service", None), ("switchboard@.service", "NAME")]
)
def test_repository_units_are_what_install_writes(name: str, instance: str | None) -> None:
    plan = plan_unit(user=False, instance=instance, config=None)
    assert render_unit(plan, (DEFAULT_PROGRAM,)) == (REPO / "systemd" / name).read_text()


def test_system_unit_has_the_operations_contract() -> None:
    text = (REPO / "systemd" / "switchboard.service").read_text()
    for line in (
        "Type=notify",
        "NotifyAccess=main",
        "WatchdogSec=30",
        "Restart=on-failure",
        "RestartPreventExitStatus=78",
        "TimeoutStopSec=45",
        "ExecReload=/bin/kill -HUP $MAINPID",
        "EnvironmentFile=-/etc/switchboard/switchboard.env",
        "StateDirectory=switchboard",
        "Environment=SWITCHBOARD_STATE_DIR=%S/switchboard",
        "User=switchboard",
        "After=network-online.target",
        "ProtectSystem=strict",
        "ProtectHome=yes",
        "MemoryDenyWriteExecute=yes",
        "SystemCallFilter=@system-service",
        "CapabilityBoundingSet=",
        "UMask=0077",
        "WantedBy=multi-user.target",
    ):
        assert line in text.splitlines(), line


def test_install_writes_the_unit_and_a_private_env_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "root"
    status, out = _cli(capsys, "install", "--root", str(root))
    assert status == 0
    unit = root / "etc/systemd/system/switchboard.service"
    env_file = root / "etc/switchboard/switchboard.env"
    assert unit.read_text() == render_unit(
        plan_unit(user=False, instance=None, config=None), program()
    )
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert "#TELEGRAM_BOT_TOKEN=" in env_file.read_text()
    assert "SWITCHBOARD_STATE_DIR" not in env_file.read_text()
    assert "#VAR=" not in env_file.read_text()
    for command in (
        "sudo systemctl daemon-reload",
        "sudo systemctl enable --now switchboard.service",
        "systemctl status switchboard.service",
        "journalctl -u switchboard.service -f",
        f"sudo {' '.join(program())} init /etc/switchboard/switchboard.yaml",
    ):
        assert command in out, command
    env_file.write_text("TELEGRAM_BOT_TOKEN=secret\n")
    assert _cli(capsys, "install", "--root", str(root))[0] == 0
    assert env_file.read_text() == "TELEGRAM_BOT_TOKEN=secret\n"


def test_user_install_uses_the_home_and_drops_system_only_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    root = tmp_path / "root"
    status, out = _cli(capsys, "install", "--user", "--root", str(root))
    assert status == 0
    relative_home = home.relative_to("/")
    text = (root / relative_home / ".config/systemd/user/switchboard.service").read_text()
    env_file = root / relative_home / ".config/switchboard/switchboard.env"
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    lines = text.splitlines()
    assert "EnvironmentFile=-%h/.config/switchboard/switchboard.env" in lines
    assert any(line.endswith("run -c %h/.config/switchboard/switchboard.yaml") for line in lines)
    assert "WantedBy=default.target" in lines
    for option in ("User=", "Group=", "ProtectSystem=", "CapabilityBoundingSet=", "Wants="):
        assert not any(line.startswith(option) for line in lines), option
    assert "systemctl --user enable --now switchboard.service" in out
    assert "journalctl --user -u switchboard.service -f" in out


def test_a_program_under_home_gets_read_only_home_protection() -> None:
    plan = plan_unit(user=False, instance=None, config=None)
    text = render_unit(plan, ("/home/ops/venv/bin/switchboard",))
    assert "ProtectHome=read-only" in text.splitlines()


def test_paths_are_escaped_or_refused(capsys: pytest.CaptureFixture[str]) -> None:
    plan = plan_unit(user=False, instance=None, config=Path("/srv/100%/switchboard.yaml"))
    assert "run -c /srv/100%%/switchboard.yaml" in render_unit(plan, (DEFAULT_PROGRAM,))
    assert main(["service", "install", "--dry-run", "-c", "/srv/my bot.yaml"]) == 78
    assert "spaces" in capsys.readouterr().err


def test_instance_names_and_configs_are_checked(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["service", "install", "--dry-run", "--instance", "../x"]) == 78
    assert main(["service", "install", "--dry-run", "--instance", "a", "-c", "/etc/b.yaml"]) == 78
    assert "a.yaml" in capsys.readouterr().err


# service uninstall: tests/bot/cli/test_uninstall.py (against a fake systemctl).


MDWE_PROBE = """
import ctypes, mmap, sys
if ctypes.CDLL(None, use_errno=True).prctl(65, 1, 0, 0, 0) != 0:  # PR_SET_MDWE, REFUSE_EXEC_GAIN
    sys.exit(77)
try:
    mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    sys.exit("W+X memory was not refused")
except PermissionError:
    pass
import importlib
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except ModuleNotFoundError:
        pass
from bot.cli import main
sys.exit(main(["chat", "-c", %r]))
"""
EDGE_MODULES = ("channels.telegram", "channels.slack", "channels.feishu", "channels.dingtalk")


def test_the_daemon_runs_without_writable_executable_memory(tmp_path: Path) -> None:
    """Backs ``MemoryDenyWriteExecute=yes``: the kernel's equivalent (PR_SET_MDWE, Linux 6.3+)
    refuses W+X memory; the whole pipeline and every shipped channel SDK must still work."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SWITCHBOARD_"))}
    env["SWITCHBOARD_STATE_DIR"] = str(tmp_path / "state")
    result = subprocess.run(  # noqa: S603 - our own CLI
        [sys.executable, "-c", MDWE_PROBE % str(EXAMPLE), *EDGE_MODULES],
        input="hello under mdwe\n",
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    if result.returncode == 77:
        pytest.skip("this kernel has no PR_SET_MDWE (Linux < 6.3)")
    assert result.returncode == 0, result.stderr
    assert "hello under mdwe" in result.stdout.split("bot>", 1)[1]
