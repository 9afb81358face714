"""``run``, ``chat``, ``check`` and ``init``: the daemon and its configuration (``init`` in
``bot/cli/init.py``).

``run`` and ``chat`` create their state private (umask 0077), as the units' ``UMask=`` does.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import sys
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from bot.cli.options import CommandFailed, Subcommands, add_config_option, load_config
from bot.config.settings import Settings
from bot.errors import ConfigError
from bot.ops.private_files import restrict_umask
from bot.ports import Channel
from bot.registry import EdgeKind, ensure_available, load
from bot.text.escape import escape_controls
from bot.text.redact import redact_url, redact_urls

if TYPE_CHECKING:
    from bot.cli.probes import ProbeResult
from bot.exit_codes import EXIT_CHECK_FAILED, EXIT_CONFIG, EXIT_OK

EXIT_USAGE = 2
"""As argparse exits on a malformed command line."""


def add_commands(commands: Subcommands) -> None:
    run = commands.add_parser("run", help="run the daemon in the foreground (what systemd runs)")
    chat = commands.add_parser("chat", help="talk to the agent in this terminal")
    check = commands.add_parser("check", help="validate the configuration")
    for sub in (run, chat, check):
        add_config_option(sub)
    chat.add_argument("-v", "--verbose", action="store_true", help="show log lines while chatting")
    chat.add_argument(
        "-m",
        "--message",
        metavar="TEXT",
        help="send one message, print the answer and exit (status 1 when the agent failed)",
    )
    check.add_argument("--json", action="store_true", help="print the result as JSON")
    check.add_argument(
        "--online", action="store_true", help="also probe each enabled channel and the model"
    )
    run.set_defaults(handler=_run_command)
    chat.set_defaults(handler=_chat_command)
    check.set_defaults(handler=_check_command)


def _run_command(args: argparse.Namespace) -> int:
    restrict_umask()
    path, settings = load_config(args)
    return _run(path, settings, chat=False, verbose=False)


def _chat_command(args: argparse.Namespace) -> int:
    restrict_umask()
    path, settings = load_config(args)
    if args.message is not None:
        return _ask_once(path, settings, args.message, verbose=args.verbose)
    return _run(path, settings, chat=True, verbose=args.verbose)


class _OneShotConsole(Channel, Protocol):
    failed_turns: int


def _ask_once(path: Path, settings: Settings, text: str, *, verbose: bool) -> int:
    """``chat -m TEXT``: one message through the whole pipeline; its lines are joined."""
    from bot.app import Daemon, DaemonOptions, Overrides  # noqa: PLC0415 - keep `check` light
    from bot.ops.logs import configure_logging  # noqa: PLC0415

    message = " ".join(text.split())
    if not message:
        raise CommandFailed("chat -m: the message is empty", EXIT_USAGE)
    settings = _chat_settings(settings)
    configure_logging(settings, level_override=None if verbose else "WARNING")
    console_class = cast(Callable[..., _OneShotConsole], load(EdgeKind.CHANNEL, "console"))
    console = console_class(settings, stdin=io.StringIO(message + "\n"))
    overrides = Overrides(channels=[console])
    options = DaemonOptions(config_path=path, chat=True, install_signals=True, overrides=overrides)
    status = asyncio.run(Daemon(settings, options).run())
    if status != EXIT_OK:
        return status
    if console.failed_turns:
        print("switchboard: the agent could not answer (the reason is above)", file=sys.stderr)
        return EXIT_CHECK_FAILED
    return EXIT_OK


def _check_command(args: argparse.Namespace) -> int:
    path, settings = load_config(args)
    return _check(path, settings, as_json=args.json, online=args.online)


def _run(path: Path, settings: Settings, *, chat: bool, verbose: bool) -> int:
    from bot.app import Daemon, DaemonOptions  # noqa: PLC0415 - keep `check`/`init` light
    from bot.console.wiring import daemon_console  # noqa: PLC0415
    from bot.ops.logs import configure_logging  # noqa: PLC0415

    if chat:
        settings = _chat_settings(settings)
    quiet = chat and not verbose
    configure_logging(settings, level_override="WARNING" if quiet else None)
    options = DaemonOptions(
        config_path=path, chat=chat, install_signals=True, mounts=(daemon_console,)
    )
    if chat:
        print("Switchboard chat — type a message, /help for commands, Ctrl-D to quit.")
    return asyncio.run(Daemon(settings, options).run())


def _chat_settings(settings: Settings) -> Settings:
    """The terminal user is the operator: console DMs are open and the user is an admin.

    The HTTP server stays off: a terminal chat serves no webhooks and must not collide with
    a daemon listening on the same port.
    """
    console = settings.channels.console.model_copy(update={"enabled": True, "dm_policy": "open"})
    channels = settings.channels.model_copy(update={"console": console})
    admin = f"console:{console.user_id}"
    access = settings.access.model_copy(update={"admins": (*settings.access.admins, admin)})
    http = settings.http.model_copy(update={"enabled": False})
    return settings.model_copy(update={"channels": channels, "access": access, "http": http})


def _check(path: Path, settings: Settings, *, as_json: bool, online: bool) -> int:
    enabled = sorted(settings.channels.enabled())
    try:
        for name in enabled:
            ensure_available(EdgeKind.CHANNEL, name)
        ensure_available(EdgeKind.AGENT, settings.agent.backend)
    except ConfigError as exc:
        raise CommandFailed(f"configuration error\n{exc}", EXIT_CONFIG) from None
    model = settings.agent.model
    summary: dict[str, object] = {
        "config": str(path),
        "ok": True,
        "state_dir": str(settings.state_dir),
        "channels": enabled,
        "agent": settings.agent.backend,
        "model": "offline echo model"
        if model.offline
        else f"{model.name} at {redact_url(model.base_url)}",
    }
    from bot.cli.check_features import feature_findings  # noqa: PLC0415 - keep `run` light
    from bot.cli.check_findings import offline_findings  # noqa: PLC0415 - keep `run` light
    from bot.cli.service import program  # noqa: PLC0415 - keep `run` light

    findings = [*offline_findings(settings, program()), *feature_findings(settings)]
    probes, online_warnings = asyncio.run(_online_checks(settings)) if online else ([], [])
    probes = [replace(probe, detail=redact_urls(probe.detail)) for probe in probes]
    if probes:
        summary["probes"] = [asdict(result) for result in probes]
    summary["errors"] = [str(finding) for finding in findings if finding.error]
    summary["warnings"] = [
        *(str(finding) for finding in findings if not finding.error),
        *_warnings(settings),
        *online_warnings,
    ]
    summary["ok"] = not summary["errors"] and all(result.ok for result in probes)
    if as_json:
        print(json.dumps(summary))
    else:
        _print_check(path, summary, probes)
    return EXIT_OK if summary["ok"] else EXIT_CHECK_FAILED


def _warnings(settings: Settings) -> list[str]:
    """What is valid but will not work as configured (``group_policy: listen``)."""
    from bot.cli import listen_check  # noqa: PLC0415 - imports the listening channels' SDKs

    if not listen_check.listening_channels(settings):
        return []
    return asyncio.run(listen_check.listen_warnings(settings))


async def _online_checks(settings: Settings) -> tuple[list[ProbeResult], list[str]]:
    """The probes, and what only an answer tells (Telegram's privacy mode)."""
    from bot.cli.check_online import privacy_warning  # noqa: PLC0415 - keep `check` light

    probes = await _online_probes(settings)
    privacy = await privacy_warning(settings)
    return probes, [] if privacy is None else [privacy]


async def _online_probes(settings: Settings) -> list[ProbeResult]:
    from bot.cli.probes import run_probes  # noqa: PLC0415 - imports the enabled SDKs

    return await run_probes(settings)


def _print_check(path: Path, summary: dict[str, object], probes: list[ProbeResult]) -> None:
    errors = cast(list[str], summary["errors"])
    if errors:
        print(f"{path}: configuration loads, but the errors below will keep it from working")
    else:
        print(f"{path}: configuration is valid")
    for key in ("state_dir", "channels", "agent", "model"):
        value = summary[key]
        shown = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
        print(f"  {key:<10} {shown or 'none enabled'}")
    for error in errors:
        print(f"error: {error}")
    for warning in cast(list[str], summary["warnings"]):
        print(f"warning: {warning}")
    if probes:
        print("online checks:")
        width = max(len(result.target) for result in probes)
        for result in probes:
            status = "ok  " if result.ok else "FAIL"
            print(f"  {result.target:<{width}}  {status}  {escape_controls(result.detail)}")
            if not result.ok:
                where = f"at {result.url}: " if result.url else ""
                print(f"  {'':<{width}}        {escape_controls(where + result.hint)}")
