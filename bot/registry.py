"""The one place edges are loaded: names → ``module:attribute`` import paths (design §1).

``bot/`` never imports ``channels/``, ``agent/`` or ``store/`` statically, so a disabled
channel's SDK is never imported and the import graph points into the kernel only.
"""

from __future__ import annotations

import importlib
import importlib.util
from enum import StrEnum

from bot.errors import ConfigError


class EdgeKind(StrEnum):
    CHANNEL = "channel"
    AGENT = "agent"
    STORE = "store"


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
        "embedded": "agent.embedded:EmbeddedBackend",
        "remote": "agent.remote:RemoteBackend",
    },
    EdgeKind.STORE: {
        "sqlite": "store.sqlite:SqliteStore.from_state_dir",
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
