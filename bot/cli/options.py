"""What every subcommand shares: the config option and loading it with exit status 78."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from bot.config.loader import find_config_path, load_settings
from bot.config.settings import Settings
from bot.errors import ConfigError
from bot.exit_codes import EXIT_CONFIG

if TYPE_CHECKING:
    Subcommands = argparse._SubParsersAction[argparse.ArgumentParser]
else:
    Subcommands = argparse._SubParsersAction


class CommandFailed(Exception):
    """Ends a subcommand with a message on stderr and the given exit status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def add_config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-c",
        "--config",
        type=Path,
        help="config file (default: $SWITCHBOARD_CONFIG or ./switchboard.yaml)",
    )


def load_config(args: argparse.Namespace, *, require_secrets: bool = True) -> tuple[Path, Settings]:
    """The chosen config file and its settings; a config error ends the command with 78."""
    try:
        path = find_config_path(args.config, os.environ)
        return path, load_settings(path, os.environ, require_secrets=require_secrets)
    except ConfigError as exc:
        raise CommandFailed(f"configuration error\n{exc}", EXIT_CONFIG) from None
