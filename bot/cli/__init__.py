"""The ``switchboard`` command line (design §13); ``python -m bot`` runs the same.

Each module adds its subcommands: ``daemon`` (run, chat, check, init; ``probes`` answers
``check --online``), ``operator.parsers`` (status, conversations, trace, users, audit, outbox,
pairing; handlers in ``operator/``), ``operator.console_url`` (console-url) and ``service``
(systemd units; their text is ``unit``).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import cast

from bot.cli.options import CommandFailed, Subcommands
from bot.text.escape import escape_lines

COMMAND_MODULES = (
    "bot.cli.daemon",
    "bot.cli.operator.parsers",
    "bot.cli.operator.console_url",
    "bot.cli.service",
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="switchboard", description="Put a LangGraph agent into your team chats."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        add = cast(Callable[[Subcommands], None], module.add_commands)
        add(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    handler = cast(Callable[[argparse.Namespace], int], args.handler)
    try:
        return handler(args)
    except CommandFailed as exc:
        print(escape_lines(f"switchboard: {exc}"), file=sys.stderr)
        return exc.status


def run_main() -> None:
    """Console-script entry point."""
    sys.exit(main())
