"""How a daemon is asked to run: the options ``switchboard run``/``chat`` and tests give
``bot.app.Daemon``, and the instances a caller may inject instead of the registry's."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from bot.config.settings import Settings
from bot.kernel import Kernel
from bot.ops.routes import HttpMount
from bot.ops.supervision import SupervisionPolicy
from bot.ports import AgentBackend, Channel, Store

MountFactory = Callable[[Callable[[], Settings], Kernel, str], HttpMount | None]
"""Routes of an operator surface built on the kernel (the console, ``bot.console.wiring``),
from the settings, the kernel and this replica's id; ``None`` where it is off."""


@dataclass(kw_only=True)
class Overrides:
    """Instances to use instead of the registry's (tests, embedding)."""

    channels: Sequence[Channel] | None = None
    agent: AgentBackend | None = None
    store: Store | None = None
    usage_clock: Callable[[], datetime] | None = None
    """What budgets, the message rate and the usage meter take as now (``None``: the time);
    tests move it to the next day."""


@dataclass(kw_only=True)
class DaemonOptions:
    config_path: Path | None = None
    chat: bool = False
    install_signals: bool = False
    overrides: Overrides = field(default_factory=Overrides)
    supervision: SupervisionPolicy = field(default_factory=SupervisionPolicy)
    mounts: Sequence[MountFactory] = ()
    """More routes on the HTTP server: ``switchboard run`` adds the operator console."""
