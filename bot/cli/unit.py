"""The systemd unit for one installation, as text: where it goes and what it says.

Pure: nothing here touches the system, so ``systemd/*.service`` in the repository can be kept
equal to this module's output by a test. Writing and removing units is ``bot.cli.service``.

A system unit runs as the dedicated user ``switchboard`` (create it once, see
docs/operations.md): a stable owner for ``state_dir`` that an operator can also run the
store-reading commands as. ``--user`` writes a unit for the user's own service manager, which
cannot switch users or set up the namespace-based sandboxing, so those options are left out.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from bot.cli.options import CommandFailed
from bot.exit_codes import EXIT_CONFIG

SERVICE_USER = "switchboard"
DEFAULT_PROGRAM = "/usr/local/bin/switchboard"
SYSTEM_UNIT_DIR = Path("/etc/systemd/system")
SYSTEM_CONFIG_DIR = Path("/etc/switchboard")
SYSTEM_STATE_DIR = Path("/var/lib/switchboard")
USER_STATE_DIR = Path(".local/state/switchboard")
"""Under the home directory: XDG's state home, spelled out (``%S`` moved in systemd 254)."""
HIDDEN_DIRS = (Path("/home"), Path("/root"), Path("/run/user"))
"""What ``ProtectHome=yes`` hides; a program or config in there needs ``read-only``."""
PRIVATE_TMP_DIRS = (Path("/tmp"), Path("/var/tmp"))  # noqa: S108 - what the unit hides
"""What ``PrivateTmp=yes`` replaces with empty folders of the service's own: a program or
config in there is invisible to a system unit."""
_INSTANCE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_UNSAFE_IN_UNIT = re.compile(r"[\s\"'\\;]")
_ENV_REFERENCE = re.compile(r"\$\{([A-Z][A-Z0-9_]*)")
NOT_SECRETS = frozenset({"SWITCHBOARD_STATE_DIR", "VAR"})
"""Set by the unit itself, or the placeholder the example's comments use."""

# Lines starting "S|" are for the system manager only, "U|" for the user manager only.
UNIT_TEMPLATE = """\
# Switchboard: chat platforms to a LangGraph agent (docs/design.md §13).
# Written by `switchboard service install`, which fills in the program and config paths.
# Change settings with `systemctl edit {service}` (a drop-in) rather than in this file.

[Unit]
Description=Switchboard chat bridge{description}
S|After=network-online.target
S|Wants=network-online.target
# A crash loop ends `failed` (start-limit-hit) instead of restarting every 5 s forever: a 6th
# start within 10 min is refused, so a loop of crashes at start (~6 s each) or of starts that
# hang until TimeoutStartSec (95 s each) stops. Start again after `systemctl reset-failed`.
StartLimitIntervalSec=600
StartLimitBurst=5

[Service]
Type=notify
NotifyAccess=main
ExecStart={exec_start}
ExecReload=/bin/kill -HUP $MAINPID
# Secrets, referred to as ${{NAME}} in the config; keep it 0600.
EnvironmentFile=-{env_file}
S|StateDirectory={state}
S|StateDirectoryMode=0700
S|Environment=SWITCHBOARD_STATE_DIR=%S/{state}
S|WorkingDirectory=%S/{state}
U|# No StateDirectory= or %S: before systemd 254 they mean ~/.config in a user unit. The daemon
U|# creates this 0700 itself; relative paths in the config are relative to the home directory.
U|Environment=SWITCHBOARD_STATE_DIR=%h/{user_state}
S|User={user}
S|Group={user}
SyslogIdentifier=switchboard
# READY=1 comes once every channel runs or is parked, at the latest 60 s after they start.
TimeoutStartSec=90
# Above daemon.shutdown_grace_s (20 s) plus the outbox flush (10 s); raise it with the grace.
TimeoutStopSec=45
WatchdogSec=30
Restart=on-failure
RestartSec=5
# 78: configuration error, which a restart cannot fix.
RestartPreventExitStatus=78

# Sandboxing; `systemd-analyze security {service}` rates it.
UMask=0077
NoNewPrivileges=yes
S|CapabilityBoundingSet=
S|ProtectSystem=strict
S|# install writes read-only instead when the program or config is under /home or /root.
S|ProtectHome={protect_home}
S|PrivateTmp=yes
S|PrivateMounts=yes
S|PrivateDevices=yes
S|ProtectKernelTunables=yes
S|ProtectKernelModules=yes
S|ProtectKernelLogs=yes
S|ProtectControlGroups=yes
S|ProtectClock=yes
S|ProtectHostname=yes
S|ProtectProc=invisible
S|RemoveIPC=yes
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6
RestrictNamespaces=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
LockPersonality=yes
# CPython and the dependencies need no writable+executable memory (cffi's ffi.callback would).
MemoryDenyWriteExecute=yes
SystemCallFilter=@system-service
SystemCallFilter=~@privileged @resources
SystemCallErrorNumber=EPERM
SystemCallArchitectures=native

[Install]
S|WantedBy=multi-user.target
U|WantedBy=default.target
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class UnitPlan:
    """One unit to install: where it and its files go, and how systemctl names it."""

    user: bool
    instance: str | None
    unit_dir: Path
    config: Path
    env_file: Path
    home: Path

    @property
    def unit_name(self) -> str:
        return "switchboard@.service" if self.instance is not None else "switchboard.service"

    @property
    def service(self) -> str:
        return f"switchboard@{self.instance}.service" if self.instance else "switchboard.service"

    @property
    def unit_path(self) -> Path:
        return self.unit_dir / self.unit_name

    @property
    def state_dir(self) -> Path:
        """Where the unit puts ``SWITCHBOARD_STATE_DIR``."""
        base = self.home / USER_STATE_DIR if self.user else SYSTEM_STATE_DIR
        return base / self.instance if self.instance is not None else base


def plan_unit(
    *, user: bool, instance: str | None, config: Path | None, home: Path | None = None
) -> UnitPlan:
    """Where the unit, config and env file of this kind of install live."""
    if instance is not None and not _INSTANCE_NAME.fullmatch(instance):
        raise CommandFailed(f"instance name {instance!r}: use letters, digits, _ . -", EXIT_CONFIG)
    home = home or Path.home()
    config_home = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    unit_dir = config_home / "systemd" / "user" if user else SYSTEM_UNIT_DIR
    config_dir = config_home / "switchboard" if user else SYSTEM_CONFIG_DIR
    stem = instance or "switchboard"
    config = (config or config_dir / f"{stem}.yaml").expanduser().absolute()
    if instance is not None and config.name != f"{instance}.yaml":
        raise CommandFailed(
            f"instance {instance!r} reads {config.parent}/{instance}.yaml (the unit is a "
            f"template over %i.yaml), not {config.name}",
            EXIT_CONFIG,
        )
    env_file = config_dir / f"{stem}.env"
    return UnitPlan(
        user=user,
        instance=instance,
        unit_dir=unit_dir,
        config=config,
        env_file=env_file,
        home=home,
    )


def render_unit(plan: UnitPlan, command: tuple[str, ...]) -> str:
    """The unit file text for ``plan``, running ``command run -c CONFIG``."""
    for path in (*map(Path, command[:1]), plan.config, plan.env_file):
        _check_path(path)
    config = _instance_path(plan, plan.config, ".yaml")
    words = [word.replace("%", "%%").replace("$", "$$") for word in command]
    exec_start = " ".join([*words, "run", "-c", config.replace("$", "$$")])
    values = {
        "service": plan.service if plan.instance is None else "switchboard@NAME",
        "description": " (%i)" if plan.instance is not None else "",
        "exec_start": exec_start,
        "env_file": _instance_path(plan, plan.env_file, ".env"),
        "state": "switchboard/%i" if plan.instance is not None else "switchboard",
        "user_state": f"{USER_STATE_DIR}/%i" if plan.instance is not None else USER_STATE_DIR,
        "user": SERVICE_USER,
        "protect_home": _protect_home(Path(command[0]), plan.config),
    }
    lines = []
    for line in UNIT_TEMPLATE.format(**values).splitlines():
        scope, _, rest = line.partition("|") if line[1:2] == "|" else ("", "", line)
        if scope in ("", "U" if plan.user else "S"):
            lines.append(rest)
    return "\n".join(lines) + "\n"


def _instance_path(plan: UnitPlan, path: Path, suffix: str) -> str:
    """A per-instance file is ``<its directory>/%i<suffix>`` in the template unit."""
    if plan.instance is None:
        return _unit_path(plan, path)
    return f"{_unit_path(plan, path.parent)}/%i{suffix}"


def _unit_path(plan: UnitPlan, path: Path) -> str:
    """``path`` as the unit says it: ``%`` escaped, and ``%h/…`` for a user unit's home."""
    if plan.user and path.is_relative_to(plan.home):
        return "%h/" + str(path.relative_to(plan.home)).replace("%", "%%")
    return str(path).replace("%", "%%")


def _check_path(path: Path) -> None:
    if _UNSAFE_IN_UNIT.search(str(path)):
        raise CommandFailed(
            f"{path}: paths with spaces, quotes, backslashes or ';' are not supported in the unit",
            EXIT_CONFIG,
        )


def _protect_home(program: Path, config: Path) -> str:
    hidden = any(path.is_relative_to(top) for path in (program, config) for top in HIDDEN_DIRS)
    return "read-only" if hidden else "yes"


def hidden_by_unit(command: tuple[str, ...], config: Path | None) -> list[tuple[Path, Path]]:
    """The program and config a system unit could not see, each with the folder hiding it
    (``PrivateTmp=yes``; ``ProtectHome=`` is made ``read-only`` for them instead)."""
    paths = [Path(command[0]).absolute(), *([] if config is None else [config.absolute()])]
    hidden = []
    for path in paths:
        top = next((top for top in PRIVATE_TMP_DIRS if path.is_relative_to(top)), None)
        if top is not None:
            hidden.append((path, top))
    return hidden


def hidden_warnings(command: tuple[str, ...], config: Path) -> list[str]:
    """``service install``'s warnings for what ``hidden_by_unit`` finds."""
    return [
        f"{path} is under {top}, which this unit replaces with an empty folder of its own "
        "(PrivateTmp=yes), so the service could not see it; install into a virtualenv "
        f"outside {' and '.join(map(str, PRIVATE_TMP_DIRS))} (/opt/switchboard), keep the "
        "config in /etc/switchboard, or use --user"
        for path, top in hidden_by_unit(command, config)
    ]


def env_skeleton() -> str:
    """The env file's first contents: every ``${VAR}`` the example config refers to."""
    example = resources.files("bot").joinpath("templates", "switchboard.example.yaml")
    names = sorted(set(_ENV_REFERENCE.findall(example.read_text("utf-8"))))
    lines = [
        "# Secrets for Switchboard, read by systemd (EnvironmentFile=) when the service starts.",
        "# The config refers to them as ${NAME}. Keep this file 0600. Uncomment what you use.",
        *(f"#{name}=" for name in names if name not in NOT_SECRETS),
    ]
    return "\n".join(lines) + "\n"
