"""The one place edges are loaded: names → ``module:attribute`` import paths (design §1).

``bot/`` never imports ``channels/``, ``agent/`` or ``store/`` statically, so a disabled
channel's SDK is never imported and the import graph points into the kernel only.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import cast

from bot.config.settings import Settings
from bot.config.store import StoreBackend
from bot.errors import ConfigError
from bot.ports import ChannelCapabilities, Store


class EdgeKind(StrEnum):
    CHANNEL = "channel"
    AGENT = "agent"
    STORE = "store"
    TOOL = "tool"
    """Operator commands' helpers that live in an edge (``store copy``)."""


IMPORT_PATHS: dict[EdgeKind, dict[str, str]] = {
    EdgeKind.CHANNEL: {
        "console": "channels.console:ConsoleChannel",
        "telegram": "channels.telegram:TelegramChannel",
        "slack": "channels.slack:SlackChannel",
        "feishu": "channels.feishu:FeishuChannel",
        "dingtalk": "channels.dingtalk:DingTalkChannel",
    },
    EdgeKind.AGENT: {
        "echo": "agent.echo:EchoBackend",
        "embedded": "agent.lazy:LazyEmbeddedBackend",
        "remote": "agent.remote:RemoteBackend",
    },
    EdgeKind.STORE: {
        "sqlite": "store.sqlite:SqliteStore",
        "postgres": "store.postgres:PostgresStore.from_url",
    },
    EdgeKind.TOOL: {
        "store-copy": "store.copy:copy_sqlite_to_postgres",
        "checkpoints-copy": "agent.postgres_checkpoints:copy_checkpoints",
    },
}


def import_path(kind: EdgeKind, name: str) -> str:
    try:
        return IMPORT_PATHS[kind][name]
    except KeyError:
        known = ", ".join(sorted(IMPORT_PATHS[kind]))
        raise ConfigError(f"unknown {kind} {name!r} (known: {known})") from None


def ensure_available(kind: EdgeKind, name: str) -> None:
    """Raise ``ConfigError`` when the edge registered under ``name`` is not shipped in this
    build; its module is located, not imported (no SDK is loaded)."""
    path = import_path(kind, name)
    module_name = path.partition(":")[0]
    try:
        found = importlib.util.find_spec(module_name)
    except ModuleNotFoundError:
        found = None
    if found is None:
        raise ConfigError(f"{kind} {name!r} is not available in this build ({path})")


def load(kind: EdgeKind, name: str) -> object:
    """Import and return the implementation registered under ``name``.

    A registered edge that is not shipped yet (its module is missing) is reported as a
    configuration error naming it, rather than as a bare ImportError.
    """
    path = import_path(kind, name)
    module_name, _, attribute = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        raise ConfigError(f"{kind} {name!r} is not available in this build ({path})") from None
    found: object = module
    for part in attribute.split("."):
        found = getattr(found, part)
    return found


def capabilities_of(channel: str) -> ChannelCapabilities | None:
    """What the adapter registered as ``channel`` declares it can do, without building it
    (its module is imported: the operator CLI plans a push with it, design §19)."""
    if channel not in IMPORT_PATHS[EdgeKind.CHANNEL]:
        return None
    declared = getattr(load(EdgeKind.CHANNEL, channel), "capabilities", None)
    return declared if isinstance(declared, ChannelCapabilities) else None


def store_for(settings: Settings) -> Store:
    """The store ``settings.store`` names, built without I/O (``open`` connects): the SQLite
    file under ``state_dir`` by default, PostgreSQL when ``store.url`` says so."""
    config = settings.store
    if config.backend is StoreBackend.POSTGRES and config.url is not None:
        postgres = cast("Callable[..., Store]", load(EdgeKind.STORE, "postgres"))
        return postgres(config.url, schema=config.db_schema, pool_size=config.pool_size)
    sqlite = cast("Callable[[Path], Store]", load(EdgeKind.STORE, "sqlite"))
    return sqlite(config.sqlite_path(settings.state_dir))
