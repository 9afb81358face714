"""``store migrate``: bring the configured store's schema up to date; ``store copy``: move a
SQLite installation into PostgreSQL (design §11, §13).

The daemon migrates at start too (PostgreSQL replicas under an advisory lock, so replicas
starting together take turns); this command lets an operator do it first, on purpose, and see
the outcome, e.g. before a rolling restart onto a new version.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, cast
from urllib.parse import urlsplit

from pydantic import ValidationError

from bot.cli.operator.output import print_json, say, show
from bot.cli.operator.runner import EXIT_FAILED, operator_actor
from bot.cli.options import CommandFailed, load_config
from bot.config.settings import Settings
from bot.config.store import SQLITE_FILENAME, StoreBackend, StoreSettings
from bot.errors import InstanceLocked, StoreError
from bot.exit_codes import EXIT_OK
from bot.operator.labels import table
from bot.ops.instance_lock import LOCK_FILE_NAME, InstanceLock
from bot.registry import EdgeKind, load, store_for

AGENT_DB = "agent.db"
"""The embedded agent's SQLite checkpoints beside the store (``agent.checkpoints``)."""


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
        say(message)
    return EXIT_OK


# --------------------------------------------------------------------------- store copy


class _CopyResult(Protocol):
    @property
    def tables(self) -> dict[str, int]: ...


class _CheckpointsCopied(Protocol):
    @property
    def threads(self) -> int: ...
    @property
    def checkpoints(self) -> int: ...
    @property
    def writes(self) -> int: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class CopyPlan:
    """Where ``store copy`` reads and writes, resolved from its options and the config."""

    source: Path
    target: StoreSettings
    """The PostgreSQL URL and schema (validated as ``store.url`` / ``store.schema`` are)."""

    @property
    def state_dir(self) -> Path:
        return self.source.parent

    @property
    def url(self) -> str:
        return self.target.url or ""  # always set: ``copy_plan`` checked the backend

    def scrub(self, message: str) -> str:
        password = urlsplit(self.url).password
        return message.replace(password, "***") if password else message


def store_copy_main(args: argparse.Namespace) -> int:
    """``store copy``: a SQLite store and its agent checkpoints into an empty PostgreSQL
    schema. The source's state directory stays locked against a daemon starting meanwhile."""
    plan = copy_plan(args)
    lock_file = plan.state_dir / LOCK_FILE_NAME
    lock = InstanceLock(plan.state_dir) if lock_file.exists() else None
    if lock is not None:
        try:
            lock.acquire()
        except InstanceLocked as exc:
            raise CommandFailed(
                f"refusing to copy {plan.source} while the daemon holds it: {exc}", EXIT_FAILED
            ) from None
    try:
        return asyncio.run(_store_copy(args, plan))
    finally:
        if lock is not None:
            lock.release()


def copy_plan(args: argparse.Namespace) -> CopyPlan:
    settings: Settings | None = None
    if args.config is not None:
        _path, settings = load_config(args, require_secrets=False)
    source_text: str | None = args.source
    target: str | None = args.target
    if source_text is None:
        if settings is None:
            raise CommandFailed("--from is required without -c", EXIT_FAILED)
        config = settings.store
        source = (
            settings.state_dir / SQLITE_FILENAME
            if config.backend is StoreBackend.POSTGRES
            else config.sqlite_path(settings.state_dir)
        )
    else:
        source = _source_path(source_text)
    if target is None:
        if settings is None:
            raise CommandFailed("--to is required without -c", EXIT_FAILED)
        if settings.store.backend is not StoreBackend.POSTGRES:
            raise CommandFailed(
                "store.url is not a PostgreSQL URL; name one with --to", EXIT_FAILED
            )
        target = settings.store.url
    schema = args.schema or (settings.store.db_schema if settings is not None else None)
    try:
        store = StoreSettings.model_validate(
            {"url": target} | ({"schema": schema} if schema else {})
        )
    except ValidationError as exc:  # messages only: the input may hold the password
        reasons = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise CommandFailed(f"--to/--schema: {reasons}", EXIT_FAILED) from None
    if store.backend is not StoreBackend.POSTGRES:
        raise CommandFailed("--to must be a postgresql:// URL (the copy's target)", EXIT_FAILED)
    return CopyPlan(source=source, target=store)


def _source_path(text: str) -> Path:
    if text.startswith(("postgresql:", "postgres:")):
        raise CommandFailed(
            "--from must be a SQLite store: store copy moves SQLite into PostgreSQL", EXIT_FAILED
        )
    if text.startswith("sqlite:"):
        parts = urlsplit(text)
        if not parts.path or parts.netloc:
            raise CommandFailed("--from: a SQLite URL is sqlite:///ABSOLUTE/PATH", EXIT_FAILED)
        path = Path(parts.path)
    else:
        path = Path(text).expanduser()
    return path / SQLITE_FILENAME if path.is_dir() else path


async def _store_copy(args: argparse.Namespace, plan: CopyPlan) -> int:
    copy_store = cast(Callable[..., Awaitable[_CopyResult]], load(EdgeKind.TOOL, "store-copy"))
    copy_checkpoints = cast(
        Callable[[Path, str, str], Awaitable[_CheckpointsCopied]],
        load(EdgeKind.TOOL, "checkpoints-copy"),
    )
    where = f"{plan.target.redacted_url()} (schema {plan.target.db_schema})"
    try:
        result = await copy_store(
            plan.source, plan.url, schema=plan.target.db_schema, actor=operator_actor()
        )
    except StoreError as exc:
        raise CommandFailed(f"store copy refused: {plan.scrub(str(exc))}", EXIT_FAILED) from None
    agent_db = plan.state_dir / AGENT_DB
    try:
        checkpoints = await copy_checkpoints(agent_db, plan.url, plan.target.db_schema)
    except Exception as exc:  # noqa: BLE001 - whatever it was, the operator must hear it
        raise CommandFailed(
            f"the store's rows were copied to {where}, but the agent checkpoints of {agent_db}"
            f" were not: {plan.scrub(str(exc))}",
            EXIT_FAILED,
        ) from None
    if args.json:
        print_json(
            {
                "done": "copied",
                "from": str(plan.source),
                "to": where,
                "tables": result.tables,
                "checkpoints": {
                    "threads": checkpoints.threads,
                    "checkpoints": checkpoints.checkpoints,
                    "writes": checkpoints.writes,
                },
            }
        )
        return EXIT_OK
    say(f"copied {plan.source} to {where}")
    rows = [[name, str(count)] for name, count in result.tables.items()]
    rows.append(
        [
            "agent checkpoints",
            f"{checkpoints.checkpoints} ({checkpoints.threads} threads,"
            f" {checkpoints.writes} pending writes)",
        ]
    )
    show(table(["TABLE", "ROWS"], rows, indent="  "))
    return EXIT_OK
