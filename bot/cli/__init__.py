"""The ``switchboard`` command line (design §13); ``python -m bot`` runs the same.

Each module adds its subcommands: ``daemon`` (run, chat, check, init; ``probes`` answers
``check --online``), ``operator.parsers`` (status, conversations, trace, users, audit, outbox,
pairing; handlers in ``operator/``), ``operator.usage`` (usage), ``operator.console_url``
(console-url), ``operator.approvals`` (approvals) and ``service`` (systemd units; their text
is ``unit``).

Every parser is a ``CliParser``: an argument a subcommand does not take is reported with that
subcommand's usage (argparse alone blames the top-level command). A reader that goes away
(``switchboard outbox list | head``) ends the command quietly with status 141, as a killed
``SIGPIPE`` writer would.

``switchboard run`` builds only the daemon's parser, and ``--version`` reads the installed
version only when asked: the modules of the other commands (and ``importlib.metadata``, whose
email and zip parsers it pulls in) stay out of the daemon's memory.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, cast

from typing_extensions import override

from bot.cli.options import CommandFailed, Subcommands
from bot.text.escape import escape_lines

COMMAND_MODULES = (
    "bot.cli.daemon",
    "bot.cli.init",
    "bot.cli.operator.parsers",
    "bot.cli.operator.usage",
    "bot.cli.operator.console_url",
    "bot.cli.operator.approvals",
    "bot.cli.service",
)
ONLY = {"run": ("bot.cli.daemon",)}
"""Commands whose parser needs only some of ``COMMAND_MODULES``: the daemon's own start."""


DISTRIBUTION = "switchboard"
EXIT_BROKEN_PIPE = 128 + 13
"""As a shell reports a writer killed by ``SIGPIPE``."""
_UNRECOGNIZED = "_unrecognized_args"
"""Where argparse's subcommand action leaves the arguments its parser did not take."""


class _Subcommands(Subcommands):
    """Arguments the chosen subcommand did not take are its error, printed with its usage."""

    @override
    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        super().__call__(parser, namespace, values, option_string)
        extras = vars(namespace).pop(_UNRECOGNIZED, None)
        if extras and isinstance(values, list):
            self.choices[values[0]].error(f"unrecognized arguments: {' '.join(extras)}")


class CliParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose subcommands (and theirs) report their own usage."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", _Subcommands)


class _Version(argparse.Action):
    """``--version``: print the installed version and exit."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.update(nargs=0, default=argparse.SUPPRESS)
        super().__init__(option_strings, dest, **kwargs)

    @override
    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

        try:
            installed = version(DISTRIBUTION)
        except PackageNotFoundError:
            installed = "unknown (not installed)"
        sys.stdout.write(f"switchboard {installed}\n")  # as argparse's own version action
        parser.exit()


def _parser(modules: Sequence[str] = COMMAND_MODULES) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = CliParser(
        prog="switchboard", description="Put a LangGraph agent into your team chats."
    )
    parser.add_argument("--version", action=_Version, help="show the version and exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in modules:
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
    try:
        try:
            status = _main(argv)
        finally:  # --help and usage errors leave by SystemExit: their text is flushed too
            sys.stdout.flush()
    except BrokenPipeError:
        _drop_stdout()
        return EXIT_BROKEN_PIPE
    return status


def _main(argv: Sequence[str] | None) -> int:
    given = sys.argv[1:] if argv is None else list(argv)
    modules = ONLY.get(given[0], COMMAND_MODULES) if given else COMMAND_MODULES
    args = _parser(modules).parse_args(given)
    handler = cast(Callable[[argparse.Namespace], int], args.handler)
    try:
        return handler(args)
    except CommandFailed as exc:
        print(escape_lines(f"switchboard: {exc}"), file=sys.stderr)
        return exc.status


def _drop_stdout() -> None:
    """The reader is gone: point stdout at /dev/null so the flush at exit cannot fail again
    (the recipe in the ``signal`` module's documentation)."""
    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError):
        return  # not a real file (a test's buffer): nothing is flushed at exit
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def run_main() -> None:
    """Console-script entry point."""
    sys.exit(main())
