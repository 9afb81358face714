"""``store migrate``: bring the configured store's schema up to date (design §11, §13).

The daemon migrates at start too (PostgreSQL replicas under an advisory lock, so replicas
starting together take turns); this command lets an operator do it first, on purpose, and see
the outcome, e.g. before a rolling restart onto a new version.
"""

from __future__ import annotations

import argparse

from bot.cli.operator.output import print_json
from bot.cli.operator.runner import EXIT_FAILED
from bot.cli.options import CommandFailed
from bot.config.settings import Settings
from bot.errors import StoreError
from bot.exit_codes import EXIT_OK
from bot.registry import store_for


async def store_migrate(args: argparse.Namespace, settings: Settings) -> int:
    config = settings.store
    where = config.redacted_url() if config.url else str(config.sqlite_path(settings.state_dir))
    store = store_for(settings)
    try:
        await store.open()
    except StoreError as exc:
        raise CommandFailed(f"store.url ({where}): {exc}", EXIT_FAILED) from None
    await store.aclose()
    message = f"{config.backend} store at {where} is up to date"
    if args.json:
        print_json({"done": message, "backend": str(config.backend), "store": where})
    else:
        print(message)
    return EXIT_OK
