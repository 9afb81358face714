"""``switchboard console-url``: a one-time login link to the operator console (design §23).

The link's token is a file in ``state_dir`` (``bot.console.login_links``): the command needs
no store and no secrets, only the config's ``state_dir`` and ``http`` address, and works for
the operator of this host, who can read ``state_dir``. It lets one browser in once, within
``console.login_link_ttl_s``; the session is audited as ``console:<name>`` (``--name``,
default ``$USER``).
"""

from __future__ import annotations

import argparse
import time

from bot.cli.operator.output import print_json, say
from bot.cli.operator.runner import EXIT_FAILED, operator_actor
from bot.cli.options import CommandFailed, Subcommands, add_config_option, load_config
from bot.exit_codes import EXIT_OK

SUMMARY = "print a one-time login link to the operator console"


def add_commands(commands: Subcommands) -> None:
    parser = commands.add_parser("console-url", help=SUMMARY, description=SUMMARY)
    add_config_option(parser)
    parser.add_argument("--json", action="store_true", help="print JSON for scripts")
    parser.add_argument("--name", help="who the audit log names (default: $USER)")
    parser.add_argument(
        "--base-url",
        help="the console's address as the browser reaches it, e.g. behind a proxy"
        " (default: http://<http.host>:<http.port>)",
    )
    parser.set_defaults(handler=console_url)


def console_url(args: argparse.Namespace) -> int:
    from bot.cli.operator.readyz import readyz_url  # noqa: PLC0415 - aiohttp: only when run
    from bot.console.login_links import make_link  # noqa: PLC0415 - not for every command

    _path, settings = load_config(args, require_secrets=False)
    if not settings.console.enabled:
        raise CommandFailed(
            "the console is off: set console.enabled: true (and console.token) and restart"
            " the daemon",
            EXIT_FAILED,
        )
    base: str | None = args.base_url
    if base is None:
        readyz = readyz_url(settings.http)
        if readyz is None:
            raise CommandFailed(
                "http is disabled or http.port is 0, so the console has no fixed address;"
                " name it with --base-url",
                EXIT_FAILED,
            )
        base = readyz.removesuffix("/readyz")
    name = args.name or operator_actor().removeprefix("cli:")
    ttl = settings.console.login_link_ttl_s
    link = make_link(settings.state_dir, name, ttl)
    url = f"{base.rstrip('/')}/console/login/once?t={link.token}"
    if args.json:
        print_json(
            {"url": url, "name": link.name, "expires_in_s": ttl, "expires_at": int(link.expires_at)}
        )
    else:
        say(url)
        left = int(link.expires_at - time.time())
        say(f"(works once, for the next {left // 60} min; logs in as console:{link.name})")
    return EXIT_OK
