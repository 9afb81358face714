"""``service install`` and ``service uninstall``: the systemd unit for this installation.

The unit runs this interpreter's ``switchboard`` (the console script next to
``sys.executable``, else ``python -m bot``) with an absolute config path, so a unit written
from a virtualenv keeps using that virtualenv. ``systemd/switchboard.service`` and
``systemd/switchboard@.service`` in the repository are this module's output for
``/usr/local/bin/switchboard``; a test keeps them equal.

What the unit says is ``bot.cli.unit``; this module writes it, the env file beside it, and
removes them again. ``uninstall`` stops and disables the service before it removes the file
(systemd warns about a running unit whose file changed on disk), then reloads systemd.
"""

from __future__ import annotations

import argparse
import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

from bot.cli.options import CommandFailed, Subcommands
from bot.cli.unit import (
    SERVICE_USER,
    UnitPlan,
    env_skeleton,
    hidden_warnings,
    plan_unit,
    render_unit,
)
from bot.exit_codes import EXIT_OK
from bot.ops.private_files import create_private_file

EXIT_CANNOT_CREATE = 73
"""``EX_CANTCREAT`` from ``sysexits.h``: a unit or env file could not be written."""
EXIT_SYSTEMCTL_FAILED = 69
"""``EX_UNAVAILABLE``: ``systemctl`` could not stop the service, so its unit was kept."""
SYSTEMCTL_TIMEOUT_S = 120.0
"""Above the unit's ``TimeoutStopSec=45`` and the kill that follows it."""


def add_commands(commands: Subcommands) -> None:
    service = commands.add_parser("service", help="install or remove the systemd unit")
    actions = service.add_subparsers(dest="action", required=True, metavar="ACTION")
    install = actions.add_parser("install", help="write the unit for this interpreter and config")
    uninstall = actions.add_parser("uninstall", help="remove the unit written by install")
    for sub in (install, uninstall):
        sub.add_argument("--user", action="store_true", help="a unit for your user's manager")
        sub.add_argument("--instance", metavar="NAME", help="one of several: switchboard@NAME")
        sub.add_argument(
            "-c",
            "--config",
            type=Path,
            help="config file (default: /etc/switchboard/switchboard.yaml, or NAME.yaml with "
            "--instance; under ~/.config/switchboard/ with --user)",
        )
        # Tests install into a scratch directory instead of /.
        sub.add_argument("--root", type=Path, default=Path("/"), help=argparse.SUPPRESS)
    install.add_argument("--dry-run", action="store_true", help="print the unit, write nothing")
    uninstall.add_argument("--dry-run", action="store_true", help="print the steps, change nothing")
    install.set_defaults(handler=_install_command)
    uninstall.set_defaults(handler=_uninstall_command)


def program() -> tuple[str, ...]:
    """How to run this installation: the ``switchboard`` script beside the interpreter."""
    interpreter = Path(sys.executable).absolute()
    script = interpreter.parent / "switchboard"
    if script.is_file() and os.access(script, os.X_OK):
        return (str(script),)
    return (str(interpreter), "-m", "bot")


def _install_command(args: argparse.Namespace) -> int:
    plan = plan_unit(user=args.user, instance=args.instance, config=args.config)
    text = render_unit(plan, program())
    if not plan.user:  # a user unit has no PrivateTmp=
        for warning in hidden_warnings(program(), plan.config):
            print(f"warning: {warning}", file=sys.stderr)
    if args.dry_run:
        print(text, end="")
        return EXIT_OK
    unit_path = _under(args.root, plan.unit_path)
    env_path = _under(args.root, plan.env_file)
    _write(unit_path, text, mode=0o644)
    print(f"wrote {unit_path}")
    if _create_env_file(env_path):
        print(f"wrote {env_path} (0600): put the secrets your config refers to there")
    else:
        print(f"kept {env_path}")
    _print_next_steps(plan, config_exists=_under(args.root, plan.config).exists())
    return EXIT_OK


def _uninstall_command(args: argparse.Namespace) -> int:
    """Stop and disable, then remove the file, then ``daemon-reload``; a template stays while
    other instances are enabled."""
    plan = plan_unit(user=args.user, instance=args.instance, config=args.config)
    unit_dir = _under(args.root, plan.unit_dir)
    unit_path = _under(args.root, plan.unit_path)
    systemctl = _systemctl_words(plan)
    if args.dry_run:
        print("Would run:")
        print(f"  {' '.join(systemctl)} disable --now {plan.service}")
        print(f"  {' '.join(systemctl)} reset-failed {plan.service}")
        shared = "    # unless other instances are enabled" if plan.instance is not None else ""
        print(f"  rm {unit_path}{shared}")
        print(f"  {' '.join(systemctl)} daemon-reload")
        _print_kept(plan)
        return EXIT_OK
    if not unit_path.exists():
        print(f"no unit at {unit_path}")
        _print_kept(plan)
        return EXIT_OK
    has_systemctl = shutil.which("systemctl") is not None
    if not has_systemctl:
        print("systemctl not found, so no systemd runs this unit: removing its links by hand")
        for link in _enablement_links(unit_dir):
            if link.name == plan.service:
                link.unlink()
                print(f"disabled: removed {link}")
    else:
        _systemctl_run(systemctl, "disable", "--now", plan.service, unit_path=unit_path)
        print(f"stopped and disabled {plan.service}")
        _systemctl_run(systemctl, "reset-failed", plan.service, unit_path=None)
    others = sorted(
        link.name
        for link in _enablement_links(unit_dir)
        if link.name.startswith("switchboard@") and link.name != plan.service
    )
    if others and plan.instance is not None:
        print(f"kept {unit_path}: still enabled for {', '.join(others)}")
    else:
        unit_path.unlink()
        print(f"removed {unit_path}")
        if has_systemctl:
            _systemctl_run(systemctl, "daemon-reload", unit_path=unit_path)
    _print_kept(plan)
    return EXIT_OK


def _systemctl_words(plan: UnitPlan) -> tuple[str, ...]:
    return ("systemctl", "--user") if plan.user else ("systemctl",)


def _systemctl_run(words: tuple[str, ...], *args: str, unit_path: Path | None) -> None:
    """Run ``systemctl``; a failure stops the uninstall (``unit_path`` says what was kept),
    except for a step that may fail harmlessly (``unit_path=None``: ``reset-failed`` of a unit
    that had not failed)."""
    command = [*words, *args]
    try:
        result = subprocess.run(  # noqa: S603 - systemctl with our own arguments
            command, capture_output=True, text=True, timeout=SYSTEMCTL_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        problem, status = str(exc), -1
    else:
        problem, status = " ".join(result.stderr.split())[:300], result.returncode
    if status == 0 or unit_path is None:
        return
    kept = f"; {unit_path} was left in place" if unit_path.exists() else ""
    raise CommandFailed(
        f"`{' '.join(command)}` failed ({problem or f'status {status}'}){kept}; run it with "
        "sudo (or --user for your own units), or stop the service yourself and try again",
        EXIT_SYSTEMCTL_FAILED,
    )


def _print_kept(plan: UnitPlan) -> None:
    print(
        f"Kept {plan.config}, {plan.env_file} and the state directory {plan.state_dir} "
        "(the database, the workspaces); remove them yourself if you no longer need them."
    )


def _enablement_links(unit_dir: Path) -> list[Path]:
    """The ``*.wants/`` links ``systemctl enable`` made (what ``disable`` would remove)."""
    return sorted(link for wants in unit_dir.glob("*.wants") for link in wants.iterdir())


def _under(root: Path, path: Path) -> Path:
    return root / path.relative_to(path.anchor)


def _write(path: Path, text: str, *, mode: int) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")
        path.chmod(mode)
    except OSError as exc:
        raise CommandFailed(_cannot_write(path, exc), EXIT_CANNOT_CREATE) from None


def _create_env_file(path: Path) -> bool:
    """The env file, 0600 from the start; an existing one is kept."""
    try:
        return create_private_file(path, env_skeleton())
    except OSError as exc:
        raise CommandFailed(_cannot_write(path, exc), EXIT_CANNOT_CREATE) from None


def _cannot_write(path: Path, exc: OSError) -> str:
    return f"cannot write {path}: {exc.strerror}; run it with sudo, or use --user"


def _systemctl(plan: UnitPlan) -> str:
    return "systemctl --user" if plan.user else "sudo systemctl"


def _print_next_steps(plan: UnitPlan, *, config_exists: bool) -> None:
    systemctl = _systemctl(plan)
    journalctl = "journalctl --user" if plan.user else "journalctl"
    print("\nNext:")
    if not plan.user and not _user_exists(SERVICE_USER):
        print(
            f"  sudo useradd --system --user-group --home-dir /var/lib/switchboard "
            f"--no-create-home --shell /usr/sbin/nologin {SERVICE_USER}"
        )
    if not config_exists:
        sudo = "" if plan.user else "sudo "
        print(f"  {sudo}{' '.join(program())} init {plan.config}    # no config there yet")
    print(f"  {systemctl} daemon-reload")
    print(f"  {systemctl} enable --now {plan.service}")
    print(f"  {systemctl} status {plan.service}")
    print(f"  {journalctl} -u {plan.service} -f")
    if plan.user:
        print("  loginctl enable-linger    # keep it running while you are logged out")


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True
