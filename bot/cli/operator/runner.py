"""What every operator subcommand shares: its ``-c``/``--json`` options, running on an event
loop, the daemon's store and the audit actor.

Handlers are named by import path and imported only when their command runs, so building the
parser stays cheap for ``check`` and ``init`` (the store and HTTP client pull in aiohttp).

They run beside a live daemon. The store is opened as a second connection to the same file
(WAL lets it read while the daemon writes, ``busy_timeout`` queues its few writes) without the
instance lock, without creating a missing database and without migrating one: a schema change
is the daemon's job at its start, never something to race it for.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import getpass
import importlib
import os
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Final, cast

from bot.cli.options import CommandFailed, Subcommands, add_config_option, load_config
from bot.config.settings import Settings
from bot.errors import StoreError
from bot.exit_codes import EXIT_CHECK_FAILED
from bot.registry import store_for

if TYPE_CHECKING:
    from bot.ports import Store

EXIT_FAILED: Final = EXIT_CHECK_FAILED
"""1: the command ran and the answer is "no" (not ready, nothing found, nothing to open)."""

OperatorHandler = Callable[[argparse.Namespace, Settings], Coroutine[object, object, int]]


def add_leaf(
    commands: Subcommands, name: str, summary: str, handler: str
) -> argparse.ArgumentParser:
    """A subcommand with ``-c`` and ``--json``; ``handler`` (``"module:function"``, an
    ``OperatorHandler``) runs on a fresh event loop."""
    parser = commands.add_parser(name, help=summary, description=summary)
    add_config_option(parser)
    parser.add_argument("--json", action="store_true", help="print JSON for scripts")
    parser.set_defaults(handler=functools.partial(_invoke, handler))
    return parser


def _invoke(handler_path: str, args: argparse.Namespace) -> int:
    _path, settings = load_config(args, require_secrets=False)
    module_name, _, name = handler_path.partition(":")
    handler = cast(OperatorHandler, getattr(importlib.import_module(module_name), name))
    try:
        return asyncio.run(handler(args, settings))
    except StoreError as exc:
        raise CommandFailed(str(exc), EXIT_FAILED) from None


def positive(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


@asynccontextmanager
async def opened_store(settings: Settings) -> AsyncIterator[Store]:
    """The daemon's store under ``state_dir``; a missing or unusable one ends the command."""
    store = store_for(settings)
    try:
        await store.open_existing()
    except StoreError as exc:
        raise CommandFailed(str(exc), EXIT_FAILED) from None
    try:
        yield store
    finally:
        await store.aclose()


def operator_actor() -> str:
    """Who the audit table names for a CLI action: ``cli:$USER`` (else the login name)."""
    user = os.environ.get("USER")
    if not user:
        try:
            user = getpass.getuser()
        except (OSError, KeyError):
            user = "unknown"
    return f"cli:{user}"
